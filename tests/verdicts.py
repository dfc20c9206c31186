"""A result as tests compare it: a violation's kind; "not-checked" for an INCONCLUSIVE whose
every reason is a property not checked on an object (the check itself completed, nothing was
truncated); else the verdict."""


def outcome(r) -> str:
    if r.violations:
        return r.violations[0].kind
    if r.verdict == "inconclusive" and r.reasons and \
            all(" NOT CHECKED on " in why for why in r.reasons):
        return "not-checked"
    return r.verdict
