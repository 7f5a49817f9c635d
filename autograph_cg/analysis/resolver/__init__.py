"""The resolver: what a name, an attribute or a call may hold, across files, without running anything.

`summaries` is the language: each function, method and module body becomes a small, picklable summary
(its parameters, what each local, `self.<attr>` and `return` may be, the calls it makes), recorded per file
with the other facts. `summarize` builds them from the syntax tree. `solver` answers questions about them
for the whole package on demand (its reading of them split by job: `names`, `binding`, `expressions`,
`attributes`, `calls`, `conditions`): values are small sets of candidates (a class, a function, an instance, a
container of candidates, a tensor, a host value, or unknown with a reason), and parameters take their
defaults and the arguments of every call site seen.
"""
