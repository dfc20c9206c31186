"""What every reported trail must show (issue 35): each step its op text, and each async
completion attributed to a line that issued a copy into that CTA not yet completed there."""
import collections


def assert_trace_readable(violation) -> None:
    issued, landed = collections.Counter(), collections.Counter()
    for st in violation.trace:
        assert st.op.strip(), f"step {st.step} ({st.process} at {st.file}:{st.line}) has no op text"
        assert st.file and st.line > 0, f"step {st.step} has no source line"
        if st.process == "async":
            landed[(st.file, st.line, st.cta)] += 1
            assert landed[(st.file, st.line, st.cta)] <= issued[(st.file, st.line)], (
                f"step {st.step}: a completion into CTA {st.cta} attributed to {st.file}:{st.line}, "
                "which has no copy left in flight into that CTA")
        elif st.process != "other CTAs":
            issued[(st.file, st.line)] += 1
