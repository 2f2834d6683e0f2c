"""Tests of plugin_zip.py: a good dist packs into a zip the check accepts,
and each way a zip can break grafana-cli's install is reported.
Run: python3 -m unittest discover -s grafana-plugin/scripts -p '*_test.py'"""
import json
import os
import stat
import tempfile
import unittest
import zipfile

import plugin_zip

ID = "trainscope-trainscope-datasource"
ELF = b"\x7fELF" + b"\0" * 60


def make_dist(root, **meta_patch):
    meta = {
        "type": "datasource",
        "id": ID,
        "backend": True,
        "executable": "gpx_trainscope",
        "info": {"version": "0.1.0", "logos": {"small": "img/logo.svg", "large": "img/logo.svg"}},
    }
    meta.update(meta_patch)
    dist = os.path.join(tempfile.mkdtemp(dir=root), "dist")
    os.makedirs(os.path.join(dist, "img"))
    files = {
        "plugin.json": json.dumps(meta).encode(),
        "module.js": b"define([],function(){})",
        "README.md": b"# trainscope",
        "img/logo.svg": b"<svg/>",
        "gpx_trainscope_linux_amd64": ELF,
        "gpx_trainscope_darwin_arm64": b"\xcf\xfa\xed\xfe",
    }
    for name, data in files.items():
        with open(os.path.join(dist, name), "wb") as f:
            f.write(data)
    for exe in ("gpx_trainscope_linux_amd64", "gpx_trainscope_darwin_arm64"):
        os.chmod(os.path.join(dist, exe), 0o755)
    return dist


def rewrite(src, dst, rename=lambda n: n, mode=None):
    """Copies zip src to dst, renaming entries and optionally changing the binary's mode."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            info.filename = rename(info.filename)
            if mode is not None and info.filename.endswith("_linux_amd64"):
                info.external_attr = (stat.S_IFREG | mode) << 16
            zout.writestr(info, data)
    return dst


class PluginZipTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def pack(self, **meta_patch):
        return plugin_zip.pack(make_dist(self.root, **meta_patch), os.path.join(self.root, "out"), "linux", "amd64")

    def assertRejected(self, path, *fragments):
        with self.assertRaises(plugin_zip.ZipError) as cm:
            plugin_zip.check(path, "linux", "amd64")
        for f in fragments:
            self.assertIn(f, str(cm.exception))

    def test_pack_lays_out_one_plugin_folder_with_an_executable_backend(self):
        path = self.pack()
        self.assertEqual(os.path.basename(path), f"{ID}-0.1.0.linux_amd64.zip")
        with zipfile.ZipFile(path) as z:
            files = sorted(n for n in z.namelist() if not n.endswith("/"))
            mode = z.getinfo(f"{ID}/gpx_trainscope_linux_amd64").external_attr >> 16
        self.assertEqual(
            files,
            [f"{ID}/{n}" for n in ["README.md", "gpx_trainscope_linux_amd64", "img/logo.svg", "module.js", "plugin.json"]],
        )
        self.assertEqual(stat.S_IMODE(mode), 0o755)
        plugin_zip.check(path, "linux", "amd64")

    def test_binary_without_exec_bit(self):
        path = rewrite(self.pack(), os.path.join(self.root, "noexec.zip"), mode=0o644)
        self.assertRejected(path, "gpx_trainscope_linux_amd64 is not stored as an executable")

    def test_folder_not_named_after_the_plugin(self):
        path = rewrite(self.pack(), os.path.join(self.root, "dist.zip"), rename=lambda n: n.replace(ID, "dist", 1))
        self.assertRejected(path, "top-level folder 'dist' is not the plugin id")

    def test_files_at_the_top_level(self):
        path = rewrite(self.pack(), os.path.join(self.root, "flat.zip"), rename=lambda n: n[len(ID) + 1 :] or "x/")
        self.assertRejected(path, "one top-level folder")

    def test_executable_in_plugin_json_without_its_binary(self):
        with self.assertRaises(plugin_zip.ZipError) as cm:
            self.pack(executable="gpx_other")
        self.assertIn("no backend binary gpx_other_linux_amd64", str(cm.exception))
        # A zip whose binary does not match plugin.json's executable.
        path = rewrite(
            self.pack(),
            os.path.join(self.root, "renamed.zip"),
            rename=lambda n: n.replace("gpx_trainscope_linux_amd64", "gpx_wrong_linux_amd64"),
        )
        self.assertRejected(path, f"missing {ID}/gpx_trainscope_linux_amd64")

    def test_version_left_as_a_placeholder(self):
        with self.assertRaises(plugin_zip.ZipError) as cm:
            self.pack(info={"version": "%VERSION%", "logos": {}})
        self.assertIn("'%VERSION%' was not filled in", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
