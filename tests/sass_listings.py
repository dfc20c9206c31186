"""nvdisasm-shaped listings for the SASS tests, from one instruction per line."""


def nvdisasm(body: str) -> str:
    """`/*addr*/ TEXT ;` lines, addresses from 0 by 0x10; lines ending in `:` are labels."""
    out, addr = ["//--------------------- .text.k --------------------------"], 0
    for line in body.strip().splitlines():
        line = line.strip()
        if line.endswith(":"):
            out.append(line)
        else:
            out.append(f"        /*{addr:04x}*/                   {line} ;")
            addr += 0x10
    return "\n".join(out) + "\n"
