"""A fake CLI: prints its arguments, the fixture's text and SOURCE_DATE_EPOCH; exits with --exit N."""
import os
import sys
from pathlib import Path

args = sys.argv[1:]
code = 0
if "--exit" in args:
    code = int(args[args.index("--exit") + 1])
print("参数：" + " ".join(args))
print("时间：" + os.environ.get("SOURCE_DATE_EPOCH", "(unset)") + " " + os.environ.get("TZ", ""))
if "--fixture" in args:
    print(Path(args[args.index("--fixture") + 1]).read_text(encoding="utf-8").strip())
if "--many" in args:
    for i in range(50):
        print(f"行 {i}")
if code:
    print("出事了", file=sys.stderr)
sys.exit(code)
