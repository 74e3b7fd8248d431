"""The shell analysis on adversarial input: it never raises, always ends with a status, and its work
(syntax nodes visited + bytes parsed) is bounded by a constant per input byte. No timing: the work
counter is what grows with a quadratic pattern, and hypothesis runs without a deadline.

Derandomized (a fixed sequence of examples, the same on every run). A random run of this test once
crashed the process inside tree-sitter's parse: that was tree-sitter-bash#337 (``{`` before a
character above U+FFFF), removed by ``shell.ctype_safe`` and contained by the parse worker processes
(``tests/tools/test_tool_shell_worker.py``); ``python -m bench.shell_fuzz`` is the bounded crash hunt."""

from __future__ import annotations

import json
import shlex

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.policy import ToolsPolicy
from guardrails.datamodel import ToolCall
from guardrails.tools import ToolAssessor
from guardrails.tools.awk import awk
from guardrails.tools.shell import MAX_COMMAND_BYTES, analyze

FRAGMENTS = ["$(", ")", "`", "<<EOF\n", "<<'E'\n", "EOF\n", "E\n", "|", "|&", "&&", "||", ";", "&", "'", '"',
             "\\", "bash -c ", "sh ", "<(", ">(", "{ ", " }", "((", "))", "${", "}", "case x in a) ", ";;",
             " esac", "\n", " ", "a", "*", "<<<", ">", ">>", "<", "2>&1", "eval ", "env -S ", "if ", "then ",
             " fi", "for i in x; do ", " done", "$'\\x41'", "~/", "/etc/", "cd ", "cat ", "curl ", "x=",
             "#", "\t", "$SHELL ", "exec -a x ", "xargs ", "find . -exec ", " \\;", "[[ ", " ]]"]
STATUSES = {"ok", "error", "too_large", "too_complex"}
WORK_PER_BYTE = 24
"""Measured: under 6 in practice; a quadratic walk exceeds any constant on the long repetitions."""

pieces = st.lists(st.sampled_from(FRAGMENTS), max_size=200).map("".join)
repeated = st.tuples(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4).map("".join),
                     st.integers(min_value=1, max_value=3000)).map(lambda t: t[0] * t[1])
nested = st.tuples(st.sampled_from([("$(", ")"), ("`", "`"), ("<(", ")"), ("bash -c '", "'"), ("(", ")"),
                                    ("{ ", "; }"), ('"$(', ')"')]),
                   st.integers(min_value=1, max_value=400)).map(lambda t: t[0][0] * t[1] + "id" + t[0][1] * t[1])
heredoc = st.integers(min_value=1, max_value=4000).map(lambda n: "cat <<EOF > f\n" + "x = 1\n" * n + "EOF\n")
commands = st.one_of(pieces, repeated, nested, heredoc, st.text(max_size=300))


@settings(deadline=None, max_examples=300, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(commands)
def test_shell_analysis_is_bounded_per_byte(command: str) -> None:
    facts = analyze(command)
    assert facts.status in STATUSES
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > MAX_COMMAND_BYTES:
        assert facts.status == "too_large" and facts.work == 0
    assert facts.work <= WORK_PER_BYTE * (size + 1), (facts.work, size)


@settings(deadline=None, max_examples=100, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(commands)
def test_any_command_gets_a_verdict(command: str) -> None:
    tools = ToolsPolicy(workspace_root="/nonexistent-ws")
    a = ToolAssessor(tools).assess(ToolCall("c", "Bash", json.dumps({"command": command})), [])
    assert a.decision in ("allow", "block")
    if analyze(command).status != "ok":
        assert a.reason_code == "unparseable_arguments"


@settings(deadline=None, max_examples=100, derandomize=True)
@given(st.text(max_size=400))
def test_any_argument_text_gets_a_verdict(arguments: str) -> None:
    a = ToolAssessor(ToolsPolicy()).assess(ToolCall("c", "Write", arguments), [])
    assert a.decision in ("allow", "block")


AWK_FRAGMENTS = ["a", "_", "9", "abc", " ", '"', '\\', "/", "[", "]", "^", "(", ")", "|", "|&", "||", "getline",
                 "getline <", "system(", "print", "print >", "<", ">", ">>", "if (", "while (", "#", "\n", ";", "{",
                 "}", "@", "@load ", '"x"', "$", "++", ".5", "~"]
awk_program = st.one_of(
    st.lists(st.sampled_from(AWK_FRAGMENTS), max_size=400).map("".join),
    st.tuples(st.lists(st.sampled_from(AWK_FRAGMENTS), min_size=1, max_size=4).map("".join),
              st.integers(min_value=1, max_value=12_000)).map(lambda t: (t[0] * t[1])[:MAX_COMMAND_BYTES - 16]),
)


@settings(deadline=None, max_examples=200, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(awk_program)
def test_awk_programs_are_read_in_work_bounded_per_byte(program: str) -> None:
    """The awk reading (#29, class 9) is counted in ``work`` and bounded per byte like the parse: a run of
    word characters, of quotes, of ``)/`` or of unclosed brackets costs no more per byte than anything else
    (the regular expressions it replaced were quadratic in a run of word characters)."""
    _, _, work = awk([program])
    assert len(program) <= work <= 2 * len(program) + 1  # each character read once, each token visited once
    command = "awk " + shlex.quote(program)
    facts = analyze(command)
    size = len(command.encode("utf-8", "surrogatepass"))
    assert facts.work <= WORK_PER_BYTE * (size + 1), (facts.work, size)
    if facts.status == "ok":
        assert facts.work >= len(program)  # the awk reading is part of the analysis' cost


def test_sed_and_awk_scripts_are_read_in_linear_time() -> None:
    """Inputs that sent embedded.sed's address pattern into exponential backtracking (minutes for
    7,000 escapes) and embedded.awk's string patterns into quadratic time: each is analysed (a hang
    here is the failure)."""
    escapes = "".join("\\" + chr(0x21 + (i % 90)) for i in range(7000))
    assert analyze("sed '" + escapes.replace("'", "") + "' f").status == "ok"
    assert analyze("awk '" + '"\\"' * 1500 + "' f").status == "ok"
