"""Adds convolution workspaces measured by extend_profile.py --tables-out to
colo's built-in profile tables (src/colo/estimate/profiles) and to a stored
profile file, keeping what they hold for other shapes:

    python3 bench/estimate/add_to_builtin_tables.py TABLES.json --note "..." [--profile PROFILE.json] [--profile-only]

The float32 entries go to h100_conv_workspace.json, the bf16 ones to
h200_conv_workspace_bf16.json; each table's "command" gains the note (where
and how they were measured)."""
import argparse
import json
import os
import sys

PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "colo", "estimate", "profiles")
BUILTIN = {"conv_workspace": "h100_conv_workspace.json", "conv_workspace_half": "h200_conv_workspace_bf16.json"}


def add(table, shapes, note):
    table["shapes"].update(shapes)
    if note:
        table["command"] = f"{table.get('command', '')}; {note}".lstrip("; ")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables")
    parser.add_argument("--note", default="")
    parser.add_argument("--profile", default=None, help="a stored profile (JSON) to add them to as well")
    parser.add_argument("--profile-only", action="store_true", help="add them to --profile only, not to colo's tables")
    args = parser.parse_args()
    measured = json.load(open(args.tables))
    unknown = sorted(set(measured) - set(BUILTIN))
    if unknown:
        sys.exit(f"add_to_builtin_tables.py: {args.tables}: no built-in table for {', '.join(unknown)} "
                 f"(expected {', '.join(BUILTIN)})")
    if args.profile_only and not args.profile:
        sys.exit("add_to_builtin_tables.py: --profile-only needs --profile")
    for name, table in ({} if args.profile_only else measured).items():
        path = os.path.join(PROFILES, BUILTIN[name])
        builtin = json.load(open(path))
        add(builtin, table["shapes"], args.note)
        with open(path, "w") as f:
            json.dump(builtin, f, separators=(",", ":"))
        print(f"{BUILTIN[name]}: +{len(table['shapes'])} shapes, {len(builtin['shapes'])} in all")
    if args.profile:
        profile = json.load(open(args.profile))
        for name, table in measured.items():
            profile.setdefault(name, {"shapes": {}})["shapes"].update(table["shapes"])
        with open(args.profile, "w") as f:
            json.dump(profile, f, indent=1)
        added = ", ".join(f"{name} +{len(table['shapes'])}" for name, table in measured.items())
        print(f"{args.profile}: {added}")


if __name__ == "__main__":
    main()
