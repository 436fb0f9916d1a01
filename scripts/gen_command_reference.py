#!/usr/bin/env python3
"""Writes each command's `--help` into docs/commands.md, between the markers
<!-- help: COMMAND --> and <!-- /help --> (COMMAND `--help` is the top-level
help). tests/e2e/command_reference_e2e.cpp fails when the page and the binary
differ; run this after changing a command's help text.
    scripts/gen_command_reference.py build/dispatcher [docs/commands.md]
"""
import re
import subprocess
import sys

BLOCK = re.compile(r'(<!-- help: (\S+) -->\n)(.*?)(<!-- /help -->)', re.S)


def help_text(binary, command):
    args = [binary, '--help'] if command == '--help' else [binary, command, '--help']
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f'gen_command_reference: {" ".join(args)} exited {done.returncode}: {done.stderr.strip()}')
    return done.stdout + done.stderr


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    binary, page = sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else 'docs/commands.md'
    with open(page, encoding='utf-8') as f:
        text = f.read()
    new = BLOCK.sub(lambda m: m.group(1) + '```text\n' + help_text(binary, m.group(2)).rstrip('\n') + '\n```\n' +
                    m.group(4), text)
    with open(page, 'w', encoding='utf-8') as f:
        f.write(new)
    print(f'gen_command_reference: {len(BLOCK.findall(new))} blocks in {page}')


if __name__ == '__main__':
    main()
