"""What every reported trail must show (issue 35): each step its op text and line, and each
async completion attributed to the step, at its line, that issued the copy it completes."""


def assert_trace_readable(violation) -> None:
    by_step = {st.step: st for st in violation.trace}
    for st in violation.trace:
        assert st.op.strip(), f"step {st.step} ({st.process} at {st.file}:{st.line}) has no op text"
        # (an implicit return has no line: a hand-built kernel's exit may lack one)
        assert st.op == "exit" or (st.file and st.line > 0), f"step {st.step} has no source line"
        if st.process == "async":
            issue = by_step.get(st.issued_at)
            assert issue is not None and st.issued_at < st.step, (
                f"step {st.step}: a completion with no issuing step before it ({st.issued_at})")
            assert (issue.file, issue.line) == (st.file, st.line), (
                f"step {st.step}: a completion attributed to {st.file}:{st.line}, but its copy was "
                f"issued at step {issue.step}, {issue.file}:{issue.line}")
