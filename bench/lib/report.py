"""Assembles BENCHMARKS.md from each benchmark's latest section and the hand-kept notes."""
import os

SECTIONS = ["sync.md", "sync-vcard.md", "sendspin.md", "network.md", "network-stalls.md", "network-vcard.md", "codecs.md", "control.md", "calibration.md", "calibration-web.md", "zones.md", "remote.md", "formats.md", "lyrics.md", "library.md", "fuzz.md"]


def assemble(root):
    results = os.path.join(root, "bench", "results")
    parts = ["# Benchmarks", "",
             "Every figure here comes from the benchmarks in `bench/`, run on this project's build",
             "machine (2 cores, shared and noisy), with Snapcast measured in the same runs. Each",
             "section says when it was last measured.", ""]
    for name in SECTIONS:
        path = os.path.join(results, name)
        if os.path.exists(path):
            parts.append(open(path).read().rstrip())
            parts.append("")
    notes = os.path.join(root, "bench", "NOTES.md")
    if os.path.exists(notes):
        parts.append(open(notes).read().rstrip())
    with open(os.path.join(root, "BENCHMARKS.md"), "w") as f:
        f.write("\n".join(parts) + "\n")
