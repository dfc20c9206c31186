"""The differential tests' summary lines, written at the end of a module past pytest's output
capture (`make fuzz` reports how many examples ran and agreed)."""
import contextlib


def write_lines(request, lines: list[str]) -> None:
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
        if tr is not None:
            tr.write_line("")
            for x in lines:
                tr.write_line(x)
        else:
            print("\n".join(lines))
