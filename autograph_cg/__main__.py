from autograph_cg.cli import main

main()
