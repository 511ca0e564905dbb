#!/usr/bin/env python3
"""What a dhat heap profile (dhat-heap.json, from crates/oxmcp-bench/examples/session_heap.rs)
still held at its end, by allocation site: bytes and blocks, biggest first, each with the
first frames of ours (oxmcp) and the frame that allocated. Arguments: the profile, and
optionally the number of idle sessions it held (to print bytes per session) and of sites.
"""

import json
import sys


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "dhat-heap.json"
    sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    with open(path) as f:
        prof = json.load(f)
    frames = prof["ftbl"]
    sites = [p for p in prof["pps"] if p.get("eb", 0) > 0]
    sites.sort(key=lambda p: p["eb"], reverse=True)
    total = sum(p["eb"] for p in sites)
    per = f", {total / sessions:.0f} per session" if sessions else ""
    print(f"held at the end: {total} bytes in {sum(p['ebk'] for p in sites)} blocks{per}")
    for p in sites[:top]:
        names = [frames[i] for i in p["fs"]]
        ours = [n for n in names if "oxmcp" in n][:3]
        first = next((n for n in names if "alloc::" not in n and "dhat::" not in n), "?")
        share = f"{p['eb'] / sessions:7.0f} B/session" if sessions else ""
        print(f"{p['eb']:>10} B {p['ebk']:>7} blocks {share}")
        for n in [first] + [o for o in ours if o != first]:
            print("      ", n.split(": ", 1)[-1][:150])


if __name__ == "__main__":
    main()
