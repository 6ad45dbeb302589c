#!/usr/bin/python3
"""gen_chat_goldens.py — reference renderings of chat templates, made with Jinja2 itself
configured as Hugging Face transformers configures it (transformers/utils/
chat_template_utils.py, _compile_jinja_template), for tests/test_chat_template.c:

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
  jinja2.ext.loopcontrols extension and transformers' {% generation %} tag (AssistantTracker); a tojson filter that is json.dumps(x,
  ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys); a global
  raise_exception(message) raising TemplateError; the variables messages,
  add_generation_prompt=True, bos_token, eos_token, tools=None, documents=None; and
  strftime_now(format) on the fixed date 2024-07-26 (--no-strftime leaves it undefined, as
  ../shared/data/chat-templates/README.md did; Llama 3.2's template then prints that same
  date).

Run it with Debian's python3-jinja2 (/usr/bin/python3; 3.1.2 made the committed goldens).

Folder layout (the same as ../shared/data/chat-templates): template.jinja, bos, eos (token
texts, may be empty or absent), SOURCE, and conversations convN.json: a JSON array of
OpenAI messages, or an object of template variables ({"messages": [...], "tools": [...],
"enable_thinking": false, ...}) that override the defaults above. For each, the script
writes convN.golden (the exact bytes) or, when rendering raises, convN.error: line 1 the
conversation (JSON), line 2 the message, line 3 the Python exception class.

usage:
  gen_chat_goldens.py DIR... [--from TDIR] [--template FILE] [--bos TEXT] [--eos TEXT] [--no-strftime]
      (re)write the goldens of every DIR/convN.json; the template, bos and eos are read
      from DIR, or from TDIR (--from: e.g. tests/chat-templates/extra/qwen2.5-instruct
      takes them from ../shared/data/chat-templates/qwen2.5-instruct), unless given
  gen_chat_goldens.py --snippets FILE
      re-render every record of a snippets file (tests/chat-templates/snippets.txt: small
      templates, one feature each) with SNIPPET_VARS and rewrite its expected texts
  gen_chat_goldens.py --check BINARY DIR... [--from TDIR] [--template FILE]
      render every conversation with Jinja2 and with BINARY (build/test_chat_template,
      its --render mode) and report the ones that differ; exit 1 if any does
"""
import datetime
import json
import os
import re
import subprocess
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

DATE = datetime.datetime(2024, 7, 26)


class Generation(Extension):
    """transformers' AssistantTracker as it renders: {% generation %}...{% endgeneration %}
    is a call block whose body is output as is (the assistant mask it also records does not
    change the text)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def render(template_text, conv, bos, eos, strftime=True):
    """The rendering (str) or the exception raised."""
    variables = {"messages": conv, "tools": None, "documents": None, "add_generation_prompt": True,
                 "bos_token": bos, "eos_token": eos}
    if strftime:
        variables["strftime_now"] = lambda fmt: DATE.strftime(fmt)
    if isinstance(conv, dict):
        variables.update(conv)
    try:
        return environment().from_string(template_text).render(**variables)
    except Exception as e:  # the template refused (raise_exception) or failed
        return e


# The variables every snippet sees (tests/test_chat_template.c passes the same).
SNIPPET_VARS = {
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"},
                 {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Tell me more"}],
    "d": {"b": 1, "a": 2},
}
SNIPPET_BOS, SNIPPET_EOS = "<s>", "</s>"


def snippets(path):
    """Rewrite the expected text of every record of a snippets file."""
    text = read(path)
    head, sep, rest = text.partition("### ")
    out = [head]
    for rec in (sep + rest).split("\n--- end\n"):
        if not rec.strip():
            continue
        name_line, _, body = rec.partition("\n")
        template = re.split(r"\n--- (?:want|error)\n", body)[0]
        r = render(template, SNIPPET_VARS, SNIPPET_BOS, SNIPPET_EOS)
        if isinstance(r, Exception):
            kind, want = "error", "%s: %s" % (type(r).__name__, str(r).replace("\n", " "))
        else:
            kind, want = "want", r
        out.append("%s\n%s\n--- %s\n%s\n--- end\n" % (name_line, template, kind, want))
    with open(path, "wb") as f:
        f.write("".join(out).encode("utf-8"))
    print("%s: %d snippets" % (path, len(out) - 1))


def read(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def conversations(folder):
    names = [n for n in os.listdir(folder) if re.fullmatch(r"conv\d+\.json", n)]
    return sorted(names, key=lambda n: int(n[4:-5]))


def write_goldens(folder, template, bos, eos, strftime):
    for name in conversations(folder):
        conv = json.loads(read(os.path.join(folder, name)))
        stem = os.path.join(folder, name[:-5])
        out = render(template, conv, bos, eos, strftime)
        for ext in (".golden", ".error"):
            if os.path.exists(stem + ext):
                os.remove(stem + ext)
        if isinstance(out, Exception):
            with open(stem + ".error", "w", encoding="utf-8") as f:
                f.write(json.dumps(conv, ensure_ascii=False) + "\n" + str(out).replace("\n", " ") + "\n" +
                        type(out).__name__ + "\n")
            print("%s: %s raised %s: %s" % (folder, name, type(out).__name__, out))
        else:
            with open(stem + ".golden", "wb") as f:
                f.write(out.encode("utf-8"))
            print("%s: %s -> %d bytes" % (folder, name, len(out.encode("utf-8"))))


def check(binary, folder, template, bos, eos):
    bad = 0
    for name in conversations(folder):
        path = os.path.join(folder, name)
        conv = json.loads(read(path))
        want = render(template, conv, bos, eos)
        tmpl_path = os.path.join(folder, ".check-template.jinja")
        with open(tmpl_path, "wb") as f:
            f.write(template.encode("utf-8"))
        r = subprocess.run([binary, "--render", tmpl_path, path, bos, eos], capture_output=True)
        os.remove(tmpl_path)
        got = r.stdout.decode("utf-8", "replace")
        if isinstance(want, Exception):
            ok = r.returncode != 0
            detail = "jinja2 raised %s: %s; edgellm: %s" % (type(want).__name__, want, got[:200])
        else:
            ok = r.returncode == 0 and got == want
            detail = "jinja2: %r\nedgellm: %r" % (want[:400], got[:400])
        if not ok:
            bad += 1
            print("DIFF %s\n%s" % (path, detail))
    return bad


def main(argv):
    args = argv[1:]
    opts = {}
    for key in ("--template", "--bos", "--eos", "--from"):
        if key in args:
            i = args.index(key)
            opts[key] = args[i + 1]
            del args[i:i + 2]
    strftime = "--no-strftime" not in args
    args = [a for a in args if a != "--no-strftime"]
    binary = None
    if args and args[0] == "--snippets":
        snippets(args[1])
        return 0
    if args and args[0] == "--check":
        binary = args[1]
        args = args[2:]
    if not args:
        print(__doc__)
        return 2
    bad = 0
    for folder in args:
        tdir = opts.get("--from", folder)
        template = read(opts["--template"]) if "--template" in opts else read(os.path.join(tdir, "template.jinja"))
        if template is None:
            print("%s: no template.jinja (give --from or --template)" % tdir)
            return 2
        bos = opts.get("--bos", read(os.path.join(tdir, "bos"), ""))
        eos = opts.get("--eos", read(os.path.join(tdir, "eos"), ""))
        if binary:
            bad += check(binary, folder, template, bos, eos)
        else:
            write_goldens(folder, template, bos, eos, strftime)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
