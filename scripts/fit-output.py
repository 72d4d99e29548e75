#!/usr/bin/env python3
"""Fits a book output to the 85 columns the book's column shows (at 1280 pixels, the
screenshots' width, a wider line breaks or scrolls); `cargo xtask check-book` fails on
any line over 90. The one formatter of output files.

scripts/regen-outputs.sh writes every output through it, and the same code refits an
output that cannot be made again here (the CUDA runs need a GPU; runs made on another
CPU type cannot be repeated on this one), so both wrap alike:

* the header: the command wraps the way a shell continues it (` \\` at the end of a
  line, the next indented), an option kept with its value; the `# device:` line wraps
  at its ` · ` separators onto lines that start with `#   `. `cargo xtask check-book`
  (xtask/src/book.rs, `output_header`) joins both back;
* a line the program printed wider than the page: broken (at a space where one is in
  the second half of the line) with a visible marker, `↩` ending the piece and `↪ `
  starting the next. `unwrap` joins them back, byte for byte.

Usage:
  fit-output.py header COMMAND DEVICE_LINE    print the wrapped header
  fit-output.py body < RAW > FITTED           wrap the program's lines
  fit-output.py unwrap < FITTED > RAW         undo `body`
  fit-output.py refit FILE...                 rewrite FILEs in place: header rewrapped
                                              from its joined text, body wrapped; each
                                              FILE whose text changes is checked to
                                              unwrap to its old body and to join to its
                                              old header; the includes of a line range
                                              of it in book/src/**/*.md follow the lines
                                              (run from the repository root)
  fit-output.py same REV FILE...              the proof, for a refit already committed:
                                              each FILE's header joins to, and its body
                                              unwraps to, exactly FILE as git revision
                                              REV had it (exit 1 naming any that differ)
  fit-output.py check FILE...                 exit 1 naming any line wider than 85
"""
import glob
import os
import re
import sys

WIDTH = 85  # what the book's column shows; the check (OUTPUT_WIDTH in xtask/src/book.rs) allows 90
END = "\u21a9"  # ↩ ends a piece of a wrapped line
CONT = "\u21aa "  # ↪ starts the piece after it


def wrap_command(command):
    words = command.split()
    units, i = [], 0
    while i < len(words):
        word = words[i]
        i += 1
        # An option and its value stay together on one line.
        if word.startswith("-") and len(word) > 1 and i < len(words) and not words[i].startswith("-"):
            word = f"{word} {words[i]}"
            i += 1
        units.append(word)
    lines, line = [], "$"
    for unit in units:
        # Room for the ' \' that continues the line.
        if len(line) + 1 + len(unit) + 2 > WIDTH and line != "$":
            lines.append(line + " \\")
            line = "   "
        line = f"{line} {unit}"
    lines.append(line)
    return lines


def wrap_device(device):
    lines, line = [], ""
    for field in device.split(" · "):
        if not line:
            line = field
        elif len(line) + 3 + len(field) <= WIDTH:
            line = f"{line} · {field}"
        else:
            lines.append(line)
            line = f"#   · {field}"
    lines.append(line)
    return lines


def header(command, device):
    return wrap_command(command) + wrap_device(device)


def wrap_line(line):
    pieces = []
    # A piece after the first carries CONT in front, so it must fit in less.
    while len(line) > WIDTH - (len(CONT) if pieces else 0):
        room = WIDTH - 1 - (len(CONT) if pieces else 0)
        cut = line.rfind(" ", room // 2, room) + 1 or room
        pieces.append(line[:cut] + END)
        line = line[cut:]
    pieces.append(line)
    return [(CONT if i else "") + p for i, p in enumerate(pieces)]


def body(lines):
    return [piece for line in lines for piece in wrap_line(line)]


def unwrap(lines):
    out, joined = [], None
    for line in lines:
        if joined is not None:
            if not line.startswith(CONT):
                raise ValueError(f"a line ends in {END} but the next does not start with {CONT!r}: {line!r}")
            line = joined + line[len(CONT):]
        if line.endswith(END):
            joined = line[: -len(END)]
        else:
            out.append(line)
            joined = None
    if joined is not None:
        raise ValueError(f"the last line ends in {END}")
    return out


def parse_header(lines):
    """(command, device line, lines taken), as output_header in xtask/src/book.rs."""
    if not lines or not lines[0].startswith("$ "):
        raise ValueError("the first line is not `$ COMMAND`")
    command, i = lines[0][2:], 1
    while command.endswith("\\") and i < len(lines):
        command = f"{command[:-1].rstrip()} {lines[i].strip()}"
        i += 1
    device = lines[i]
    i += 1
    while i < len(lines) and lines[i].startswith("#   "):
        device = f"{device} {lines[i][4:].strip()}"
        i += 1
    return command, device, i


def split_text(text):
    """Lines and whether the text ended with a newline (kept as it was)."""
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), text.endswith("\n")


def refit(path):
    old_text = open(path, encoding="utf-8").read()
    old, newline = split_text(old_text)
    command, device, taken = parse_header(old)
    head = header(command, device)
    # A header that fits stays as the script wrote it: rewrapping it would only move lines.
    if all(len(l) <= WIDTH for l in old[:taken]):
        head = old[:taken]
    new = head + body(old[taken:])
    # The proof: the new file reads back as the old one.
    assert parse_header(new)[:2] == (command, device), path
    assert unwrap(new[len(head):]) == old[taken:], path
    new_text = "\n".join(new) + ("\n" if newline else "")
    if new_text == old_text:
        return None
    open(path, "w", encoding="utf-8").write(new_text)
    # Old line -> (first, last) new line: the header as one block, then each line.
    moves = {i: (1 if i == 1 else len(head), len(head) if i == taken else 1) for i in range(1, taken + 1)}
    n = len(head)
    for i, line in enumerate(old[taken:], start=taken + 1):
        k = len(wrap_line(line))
        moves[i] = (n + 1, n + k)
        n += k
    print(f"{path}: refitted, {len(old)} lines -> {len(new)}", file=sys.stderr)
    return moves


def move_ranges(pages, name, moves):
    """Includes of outputs/NAME.txt:A:B in `pages` follow the lines they took."""
    pattern = re.compile(r"(\{\{#include [^}:]*outputs/" + re.escape(name) + r"\.txt):(\d*)(?::(\d*))?\}\}")

    def moved(m):
        a, b = m.group(2), m.group(3)
        a2 = str(moves[int(a)][0]) if a else ""
        if b is None:
            return f"{m.group(1)}:{a2}}}}}"
        b2 = str(moves[int(b)][1]) if b else ""
        return f"{m.group(1)}:{a2}:{b2}}}}}"

    for page in pages:
        text = open(page, encoding="utf-8").read()
        new = pattern.sub(moved, text)
        if new != text:
            open(page, "w", encoding="utf-8").write(new)
            print(f"{page}: ranges of {name}.txt moved", file=sys.stderr)


def same(rev, path):
    import subprocess
    old = subprocess.run(["git", "show", f"{rev}:{path}"], check=True, capture_output=True).stdout.decode("utf-8")
    new = open(path, encoding="utf-8").read()
    (ol, oe), (nl, ne) = split_text(old), split_text(new)
    oc, od, ot = parse_header(ol)
    nc, nd, nt = parse_header(nl)
    ok = (oc, od) == (nc, nd) and unwrap(nl[nt:]) == ol[ot:] and oe == ne
    print(f"{path}: {'the same text as' if ok else 'DIFFERS from'} {rev}'s", file=sys.stderr)
    return ok


def check(path):
    lines, _ = split_text(open(path, encoding="utf-8").read())
    wide = [(n, len(l)) for n, l in enumerate(lines, start=1) if len(l) > WIDTH]
    for n, w in wide:
        print(f"{path}:{n}: {w} characters wide, over {WIDTH}", file=sys.stderr)
    return not wide


def main(argv):
    if len(argv) == 3 and argv[0] == "header":
        print("\n".join(header(argv[1], argv[2])))
    elif argv == ["body"] or argv == ["unwrap"]:
        lines, newline = split_text(sys.stdin.read())
        out = body(lines) if argv[0] == "body" else unwrap(lines)
        sys.stdout.write("\n".join(out) + ("\n" if newline else ""))
    elif len(argv) > 1 and argv[0] == "refit":
        pages = glob.glob("book/src/**/*.md", recursive=True)
        for path in argv[1:]:
            moves = refit(path)
            if moves:
                move_ranges(pages, os.path.basename(path)[: -len(".txt")], moves)
    elif len(argv) > 2 and argv[0] == "same":
        return 0 if all([same(argv[1], p) for p in argv[2:]]) else 1
    elif len(argv) > 1 and argv[0] == "check":
        return 0 if all([check(p) for p in argv[1:]]) else 1
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
