"""The conformance suite: litmus kernels, one or more per rule of docs/semantics.md, run on an
H200 and compared with what warpspin's model predicts (docs/conformance.md)."""
