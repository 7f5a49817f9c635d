"""Where the runtime import goes (as isort would put it), and that undo takes away exactly what was added."""

from __future__ import annotations

import pytest

from autograph_cg.rewrite import Unsafe, rewrite_source, undo_source

from .sites import sites_for
from .test_wrap import IMPORT, rewrite

USE = "m = MLP(1)\n"
NEW_USE = "m = CUDAGraphedLayer(MLP(1))\n"

PLACEMENT = {
    "sorted block: after plain imports, before later from-imports": (
        "import paddle\nfrom paddle import nn\n\n" + USE,
        "import paddle\n" + IMPORT + "from paddle import nn\n\n" + NEW_USE,
    ),
    "first in its block: takes the block's comment": (
        '"""Doc."""\n\n# models\nfrom paddle import nn\n\n' + USE,
        '"""Doc."""\n\n# models\n' + IMPORT + "from paddle import nn\n\n" + NEW_USE,
    ),
    "unsorted block: at its end": (
        "import torch\nimport numpy as np\n\n" + USE,
        "import torch\nimport numpy as np\n" + IMPORT + "\n" + NEW_USE,
    ),
    "stdlib and local blocks only: a new block between them": (
        "import os\nimport sys\n\nfrom .mlp import MLP\n\n" + USE,
        "import os\nimport sys\n\n" + IMPORT + "\nfrom .mlp import MLP\n\n" + NEW_USE,
    ),
    "stdlib directly followed by code": (
        "import os\n" + USE,
        "import os\n\n" + IMPORT + NEW_USE,
    ),
    "after the docstring and __future__": (
        '"""Doc."""\nfrom __future__ import annotations\n\n\nclass A:\n    def f(self):\n        ' + USE,
        '"""Doc."""\nfrom __future__ import annotations\n\n' + IMPORT + "\n\nclass A:\n    def f(self):\n        " + NEW_USE,
    ),
    "docstring then a local import without a blank line": (
        '"""Doc."""\nfrom .mlp import MLP\n' + USE,
        '"""Doc."""\n' + IMPORT + "from .mlp import MLP\n" + NEW_USE,
    ),
    "no imports at all, header comments kept on top": (
        "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n# Copyright\n\nclass A:\n    def f(self):\n        " + USE,
        "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n# Copyright\n\n" + IMPORT + "class A:\n    def f(self):\n        " + NEW_USE,
    ),
    "never inside if TYPE_CHECKING": (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import paddle\n\n" + USE,
        "from typing import TYPE_CHECKING\n\n" + IMPORT + "\nif TYPE_CHECKING:\n    import paddle\n\n" + NEW_USE,
    ),
    "never inside try/except": (
        "try:\n    import paddle\nexcept ImportError:\n    paddle = None\n" + USE,
        IMPORT + "try:\n    import paddle\nexcept ImportError:\n    paddle = None\n" + NEW_USE,
    ),
    "before a module-level use that precedes the imports": (
        USE + "import paddle\n",
        IMPORT + NEW_USE + "import paddle\n",
    ),
    "the user's own import, even unused, is reused and survives undo": (
        "from autograph_cg.runtime import CUDAGraphedLayer\nimport paddle\n\n" + USE,
        "from autograph_cg.runtime import CUDAGraphedLayer\nimport paddle\n\n" + NEW_USE,
    ),
    "a star import of the runtime counts as the import": (
        "from autograph_cg.runtime import *\n\n" + USE,
        "from autograph_cg.runtime import *\n\n" + NEW_USE,
    ),
}


@pytest.mark.parametrize("case", sorted(PLACEMENT))
def test_import_placement(case: str) -> None:
    before, after = PLACEMENT[case]
    assert rewrite(before, {"MLP"}).decode() == after


@pytest.mark.parametrize(
    "binding",
    [
        "from paddle.device.cuda.cuda_graphed_layer import CUDAGraphedLayer\n",
        "import autograph_cg.runtime as CUDAGraphedLayer\n",
        "CUDAGraphedLayer = None\n",
        "try:\n    from mylib import CUDAGraphedLayer\nexcept ImportError:\n    pass\n",
    ],
)
def test_a_name_bound_to_something_else_refuses_the_file(binding: str) -> None:
    data = (binding + USE).encode()
    with pytest.raises(Unsafe) as err:
        rewrite_source(data, sites_for(data, {"MLP"}))
    assert err.value.kind == "conflict"


def test_undo_keeps_the_added_import_while_a_kept_wrapper_still_uses_it() -> None:
    src = "import paddle\n" + IMPORT + "\na = CUDAGraphedLayer(MLP(1))  # autograph-cg: skip\nb = CUDAGraphedLayer(MLP(2))\n"
    new = undo_source(src.encode()).new.decode()
    assert new == src.replace("b = CUDAGraphedLayer(MLP(2))", "b = MLP(2)")


def test_a_second_import_line_is_never_added() -> None:
    new = rewrite("import paddle\n\n" + USE + "n = MLP(2)\n", {"MLP"})
    assert new.count(b"import CUDAGraphedLayer") == 1


@pytest.mark.parametrize(
    "binding",
    [
        "if FLAG:\n    pass\nelif OTHER:\n    from mylib import CUDAGraphedLayer\n",
        "if FLAG: from mylib import CUDAGraphedLayer\n",
        "def CUDAGraphedLayer(layer):\n    return layer\n",
        "CUDAGraphedLayer: type = object\n",
    ],
)
def test_bindings_in_nested_blocks_and_definitions_conflict(binding: str) -> None:
    data = (binding + USE).encode()
    with pytest.raises(Unsafe) as err:
        rewrite_source(data, sites_for(data, {"MLP"}))
    assert err.value.kind == "conflict"
