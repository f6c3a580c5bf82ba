"""What a DuckDB connection may read: computed from what is really on disk, links and hidden files included."""

import os
from pathlib import Path

import pytest

from mcpgen.engines.file_reach import FileReachError, check_root, readable_set


@pytest.fixture
def root(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("x\n1\n")
    return tmp_path


def test_a_clean_project_folder_is_allowed_whole(root):
    reach = readable_set(root)
    assert (reach.directories, reach.paths) == ([f"{root}{os.sep}"], [])


def test_a_hidden_file_keeps_its_folder_out_and_the_clean_subfolders_in(root):
    (root / ".env").write_text("SECRET=1")
    reach = readable_set(root)
    assert (reach.directories, reach.paths) == ([f"{root / 'data'}{os.sep}"], [])


def test_a_link_to_a_file_is_readable_only_when_its_target_is(root):
    os.symlink(root / "data" / "a.csv", root / "data" / "b.csv")
    os.symlink("/etc/hostname", root / "data" / "host")
    reach = readable_set(root)
    assert reach.directories == []  # data/ holds links: its files are listed one by one
    assert reach.paths == [str(root / "data" / "a.csv"), str(root / "data" / "b.csv")]


def test_a_link_to_a_folder_outside_is_refused_in_one_sentence(root):
    os.symlink("/etc", root / "data" / "etc")
    with pytest.raises(FileReachError) as err:
        readable_set(root)
    assert str(err.value).startswith("data/etc is a link to the folder /etc: DuckDB checks paths as text")


def test_a_sibling_folder_link_is_allowed(root):
    (root / "lib").mkdir()
    os.symlink("lib", root / "lib64")
    assert readable_set(root).directories == [f"{root / 'data'}{os.sep}", f"{root / 'lib'}{os.sep}"]


@pytest.mark.parametrize("folder", [Path("/"), Path.home(), Path.home().parent])
def test_the_root_or_the_home_folder_is_never_a_project(folder):
    with pytest.raises(FileReachError, match="put mcpgen.yaml in a folder that holds only the project"):
        check_root(folder)
