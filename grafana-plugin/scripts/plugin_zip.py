#!/usr/bin/env python3
"""Packs grafana-plugin/dist/ into the zip `grafana-cli --pluginUrl URL plugins
install ID` installs, and checks such a zip.

grafana-cli extracts every entry with its first path component replaced by
the plugin id (removeGitBuildFromName in Grafana's pkg/plugins/storage), and
gives each file the Unix mode stored in the zip. So the zip holds one
top-level folder named after the plugin id, and the backend binary keeps its
executable bit:

  trainscope-trainscope-datasource/plugin.json
  trainscope-trainscope-datasource/module.js
  trainscope-trainscope-datasource/gpx_trainscope_linux_amd64   (mode 0755)
  ...

Usage:
  plugin_zip.py pack DIST OUT_DIR [--os linux] [--arch amd64]   # writes OUT_DIR/<id>-<version>.<os>_<arch>.zip, checks it, prints its path
  plugin_zip.py check ZIP [--os linux] [--arch amd64]
"""
import argparse
import json
import os
import re
import stat
import sys
import tempfile
import zipfile

# What grafana-cli replaces with the plugin id in each entry's name.
TOP_FOLDER = re.compile(r"^[a-zA-Z0-9_.-]*/")
UNIX = 3  # ZipInfo.create_system for Unix: the external attributes carry st_mode


class ZipError(Exception):
    pass


def binary_name(executable, goos, goarch):
    name = f"{executable}_{goos}_{goarch}"
    return name + ".exe" if goos == "windows" else name


def read_plugin_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def pack(dist, out_dir, goos, goarch):
    """Zips dist as <id>/..., leaving out other platforms' backend binaries."""
    meta = read_plugin_json(os.path.join(dist, "plugin.json"))
    plugin_id, version = meta["id"], meta["info"]["version"]
    keep = binary_name(meta["executable"], goos, goarch) if meta.get("backend") else None
    if keep and not os.path.isfile(os.path.join(dist, keep)):
        raise ZipError(f"pack {dist}: no backend binary {keep} (build it first: make plugin-backend)")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, f"{plugin_id}-{version}.{goos}_{goarch}.zip")
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(dist, plugin_id + "/")
        for root, dirs, files in os.walk(dist):
            dirs.sort()
            rel = os.path.relpath(root, dist)
            for d in dirs:
                z.write(os.path.join(root, d), os.path.normpath(os.path.join(plugin_id, rel, d)) + "/")
            for name in sorted(files):
                if rel == "." and meta.get("backend") and name.startswith(meta["executable"] + "_") and name != keep:
                    continue
                # ZipInfo.from_file (inside write) stores the file's mode, exec bit included.
                z.write(os.path.join(root, name), os.path.normpath(os.path.join(plugin_id, rel, name)))
    os.replace(tmp, out)
    check(out, goos, goarch)
    return out


def check(path, goos, goarch):
    """Raises ZipError naming every way the zip differs from what grafana-cli installs."""
    problems = []
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        names = [i.filename for i in infos]
        bad = [n for n in names if n.startswith("/") or ".." in n.split("/")]
        if bad:
            raise ZipError(f"{path}: entries outside the plugin folder: {bad}")
        tops = sorted({n.split("/")[0] for n in names})
        loose = [n for n in names if "/" not in n]
        if len(tops) != 1 or loose:
            raise ZipError(f"{path}: want one top-level folder named after the plugin id, got {tops}")
        top = tops[0]
        if top + "/plugin.json" not in names:
            raise ZipError(f"{path}: no {top}/plugin.json")
        meta = json.loads(z.read(top + "/plugin.json"))
        plugin_id = meta.get("id")
        if top != plugin_id:
            problems.append(f'top-level folder {top!r} is not the plugin id {plugin_id!r} (plugin.json "id")')
        version = meta.get("info", {}).get("version", "")
        if not version or "%" in version:
            problems.append(f"plugin.json info.version {version!r} was not filled in by the build")
        want = ["module.js", "README.md"]
        want += [meta["info"]["logos"][k] for k in ("small", "large") if meta.get("info", {}).get("logos", {}).get(k)]
        exe = None
        if meta.get("backend"):
            if not meta.get("executable"):
                problems.append('plugin.json has "backend": true but no "executable"')
            else:
                exe = binary_name(meta["executable"], goos, goarch)
                want.append(exe)
        for w in want:
            if f"{top}/{w}" not in names:
                problems.append(f"missing {top}/{w}")
        if exe and f"{top}/{exe}" in names:
            info = z.getinfo(f"{top}/{exe}")
            mode = info.external_attr >> 16
            if info.create_system != UNIX or not stat.S_ISREG(mode) or mode & 0o111 != 0o111:
                problems.append(f"{top}/{exe} is not stored as an executable Unix file (mode {oct(mode)}): Grafana could not start the backend")
            magic = z.read(info)[:4]
            if goos == "linux" and magic != b"\x7fELF":
                problems.append(f"{top}/{exe} is not a Linux (ELF) binary")
        if not problems:
            problems += unpack_as_grafana_cli(z, plugin_id, exe)
    if problems:
        raise ZipError(f"{path}:\n  " + "\n  ".join(problems))


def unpack_as_grafana_cli(z, plugin_id, exe):
    """Extracts the zip the way grafana-cli does and checks what Grafana then finds."""
    problems = []
    with tempfile.TemporaryDirectory() as plugins_dir:
        for info in z.infolist():
            dst = os.path.join(plugins_dir, TOP_FOLDER.sub(plugin_id + "/", info.filename, count=1))
            if info.is_dir():
                os.makedirs(dst, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst, "wb") as f:
                f.write(z.read(info))
            os.chmod(dst, stat.S_IMODE(info.external_attr >> 16) or 0o644)
        plugin_dir = os.path.join(plugins_dir, plugin_id)
        installed = read_plugin_json(os.path.join(plugin_dir, "plugin.json"))
        if installed.get("id") != plugin_id:
            problems.append(f"installed plugin.json id {installed.get('id')!r}, want {plugin_id!r}")
        if exe and not os.access(os.path.join(plugin_dir, exe), os.X_OK):
            problems.append(f"after install, {plugin_id}/{exe} is not executable")
    return problems


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pk = sub.add_parser("pack")
    pk.add_argument("dist")
    pk.add_argument("out_dir")
    ck = sub.add_parser("check")
    ck.add_argument("zip")
    for s in (pk, ck):
        s.add_argument("--os", default="linux")
        s.add_argument("--arch", default="amd64")
    a = p.parse_args(argv)
    try:
        if a.cmd == "pack":
            print(pack(a.dist, a.out_dir, a.os, a.arch))
        else:
            check(a.zip, a.os, a.arch)
            print(f"{a.zip}: ok")
    except (ZipError, OSError, KeyError, json.JSONDecodeError, zipfile.BadZipFile) as e:
        print(f"plugin_zip: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
