"""``guardproxy serve | check-policy | schema | replay | scan | tail`` (also ``python -m proxy``)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from config.policy import PolicyError, load_policy, refuse_if_empty
from config.settings import SettingsError, load_settings, unknown_variables


def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from proxy.edge.app import create_app
    from proxy.ops.logs import configure

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port), ("policy", args.policy),
                                   ("workers", args.workers)) if v}
    try:
        settings = load_settings(**overrides)
    except SettingsError as exc:
        print(f"guardproxy: {exc}", file=sys.stderr)
        return 2
    configure(settings.log_level)
    try:
        app = create_app(settings)  # refuses a listen beyond loopback without any token (proxy.edge.access)
    except (PolicyError, SettingsError) as exc:
        print(f"guardproxy: {exc}", file=sys.stderr)
        return 2
    if unknown := unknown_variables(os.environ, app.services.book.referenced_env()):
        print("guardproxy: unknown settings in the environment (unset them, or fix the name)\n  "
              + "\n  ".join(unknown), file=sys.stderr)
        return 2
    print(f"guardproxy listening on http://{settings.host}:{settings.port} "
          f"(policy: {settings.policy or 'shipped default'}, guardrails "
          f"{'on' if settings.guardrails_enabled else 'off'}, workers {settings.workers})", file=sys.stderr)
    if settings.workers > 1:
        from proxy.commands.workers import run_workers

        return run_workers(settings, overrides)
    from proxy.commands.workers import uvicorn_options

    uvicorn.run(app, **uvicorn_options(settings))
    return 0


def check_policy(args: argparse.Namespace) -> int:
    """Validate one policy: the schema, then building every guardrail (regexes compile, files exist).
    Exit 0 when it can serve, 1 when not; ``--json`` prints the verdict as one JSON object (for CI)."""
    source = args.file or "shipped default policy"
    policy = None
    try:
        policy = load_policy(args.file)
        if args.file:
            refuse_if_empty(policy, args.file)
        import httpx

        from proxy.drive.policies import build_guard

        build_guard("check", policy, load_settings(policy=args.file), httpx.AsyncClient())
    except (PolicyError, SettingsError) as exc:
        problems = getattr(exc, "problems", None) or [{"message": str(exc)}]
        for problem in problems:  # build-stage errors know the key, not the file
            problem.setdefault("file", source)
        if args.json:
            print(json.dumps({"file": source, "ok": False, "problems": problems}))
        else:
            text = str(exc)
            print(text if text.startswith(source) else f"{source}: {text}", file=sys.stderr)
        return 1
    summary = {"stream_guardrails": len(policy.stream_guardrails),
               "message_guardrails": len(policy.message_guardrails),
               "input_guardrails": len(policy.input_guardrails), "tool_rules": policy.tools is not None}
    if args.json:
        print(json.dumps({"file": source, "ok": True, "problems": [], **summary}))
        return 0
    print(f"{source}: ok ({summary['stream_guardrails']} stream guardrails, {summary['message_guardrails']} "
          f"message guardrails, {summary['input_guardrails']} input guardrails, "
          f"tool rules {'on' if policy.tools else 'off'})")
    return 0


def schema(args: argparse.Namespace) -> int:
    """Print the policy file's JSON Schema (for taplo / Even Better TOML; see docs/policy.md)."""
    from config.policy import policy_schema

    print(json.dumps(policy_schema(), indent=2))
    return 0


def replay(args: argparse.Namespace) -> int:
    from guardrails.tools.replay import main_replay

    argv = [args.log] + (["--policy", args.policy] if args.policy else [])
    return main_replay(argv)


def tail(args: argparse.Namespace) -> int:
    from proxy.commands.tail import Filter, follow

    only = Filter(guardrails=args.guardrail, events=args.event, decisions=args.decision, policies=args.policy,
                  passes=args.passes)
    return follow(args.url, args.token, args.json, args.limit, only, False if args.no_color else None)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("guardproxy")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _scan(args: argparse.Namespace) -> int:
    from proxy.commands.scan import scan

    return scan(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="guardproxy", description=__doc__)
    parser.add_argument("--version", action="version", version=f"guardproxy {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="run the proxy")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--policy", help="policy TOML (default: GUARDPROXY_POLICY or the shipped default)")
    p.add_argument("--workers", type=int, help="processes sharing the port (default: GUARDPROXY_WORKERS or 1)")
    p.set_defaults(fn=serve)
    p = sub.add_parser("check-policy", help="validate a policy file and exit")
    p.add_argument("file", nargs="?", help="policy TOML (default: the shipped default)")
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.set_defaults(fn=check_policy)
    p = sub.add_parser("schema", help="print the policy file's JSON Schema")
    p.set_defaults(fn=schema)
    p = sub.add_parser("replay", help="re-decide recorded tool assessments; exit 1 when any differs")
    p.add_argument("log", help="audit log (JSON lines)")
    p.add_argument("--policy", help="decide under this policy instead of the recorded one")
    p.set_defaults(fn=replay)
    p = sub.add_parser("scan", help="list what the policy's stream guardrails would trip on in a folder")
    p.add_argument("path", help="a folder (every text file under it) or one file")
    p.add_argument("--policy", help="policy TOML (default: the shipped default)")
    p.add_argument("--json", action="store_true", help="one JSON object per trip")
    p.set_defaults(fn=_scan)
    p = sub.add_parser("tail", help="follow the live decision feed (GET /events)")
    p.add_argument("--url", help="the proxy's base URL (default: http://GUARDPROXY_HOST:GUARDPROXY_PORT)")
    p.add_argument("--token", help="the proxy token (default: GUARDPROXY_AUTH_TOKEN)")
    p.add_argument("--json", action="store_true", help="print each record as JSON")
    p.add_argument("--limit", type=int, help="exit after this many records")
    p.add_argument("--guardrail", action="append", help="only this guardrail id or tool rule (repeatable)")
    p.add_argument("--event", action="append", help="only this event, e.g. tool_call.assessed (repeatable)")
    p.add_argument("--decision", action="append", help="only this decision, e.g. block (repeatable)")
    p.add_argument("--policy", action="append", help="only requests under this named policy (repeatable)")
    p.add_argument("--passes", action="store_true", help="also show what passed (allow, pass, log)")
    p.add_argument("--no-color", action="store_true", help="no colour even on a terminal (NO_COLOR works too)")
    p.set_defaults(fn=tail)
    args = parser.parse_args(argv)
    return int(args.fn(args))
