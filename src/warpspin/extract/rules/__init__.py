"""The walker's rules, one module per op family.

Each module holds a mixin class of `WarpWalker` methods (its rules and their helpers) and
`HANDLERS`, the MLIR ops it handles (op name -> method); extract/walker.py assembles
`WarpWalker` from the mixins and its dispatch table from the family tables.
"""
