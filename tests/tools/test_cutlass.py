"""The CUTLASS/CuTe source browser, against the real headers and examples of the installed nvidia-cutlass wheel."""

from __future__ import annotations

import re

import pytest

from kernelpro.config import CutlassSettings
from kernelpro.cutlass import CutlassBrowser, CutlassPathError, CutlassSourceNotFound, sources
from kernelpro.cutlass import index as index_module
from kernelpro.cutlass.browser import MAX_READ_LINES
from kernelpro.cutlass.examples import expand
from kernelpro.cutlass.results import MAX_HEADLINE_CHARS
from kernelpro.cutlass.scanner import scan_cpp, scan_python

try:
    sources.locate(CutlassSettings(include_dsl=False))
except CutlassSourceNotFound:
    pytest.skip("nvidia-cutlass is not installed", allow_module_level=True)

RENDER_LIMIT = 10_000


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> CutlassSettings:
    return CutlassSettings(index_dir=tmp_path_factory.mktemp("cutlass-index"), include_dsl=False, max_results=20)


@pytest.fixture(scope="module")
def browser(settings) -> CutlassBrowser:
    return CutlassBrowser(settings)


def small(text: str) -> str:
    assert len(text) < RENDER_LIMIT
    assert all(len(line) <= MAX_HEADLINE_CHARS + 2 for line in text.splitlines())
    return text


# --- locating the source ---------------------------------------------------------------------------------


def test_the_wheel_tree_is_found_with_headers_and_examples(browser):
    assert browser.tree.origin.startswith("nvidia-cutlass wheel")
    assert browser.tree.version.startswith("4.")
    prefixes = {m.prefix for m in browser.tree.mounts}
    assert {"include", "examples"} <= prefixes
    assert browser.stats.indexed_files > 700 and browser.stats.symbols > 10_000


def test_without_any_source_the_error_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setattr(sources, "_wheel_root", lambda: None)
    with pytest.raises(CutlassSourceNotFound, match=r"pip install nvidia-cutlass.*KERNELPRO_CUTLASS__ROOT"):
        CutlassBrowser(CutlassSettings(index_dir=tmp_path))
    with pytest.raises(CutlassSourceNotFound, match="not a CUTLASS checkout"):
        sources.locate(CutlassSettings(root=tmp_path))


def test_a_checkout_root_is_used_as_given(browser):
    root = browser.tree.mounts[0].directory.parent  # the wheel's source/ has a checkout's layout
    tree = sources.locate(CutlassSettings(root=root, include_dsl=False))
    assert tree.origin == "checkout"
    assert tree.version.startswith("4.")
    assert tree.resolve("include/cute/layout.hpp").is_file()


def test_the_dsl_sources_join_when_installed():
    if sources._dsl_package() is None:
        pytest.skip("nvidia-cutlass-dsl is not installed")
    tree = sources.locate(CutlassSettings())
    assert sources.DSL_MOUNT in {m.prefix for m in tree.mounts}
    assert tree.resolve(sources.DSL_MOUNT + "/cute/__init__.py").is_file()


# --- the index and its cache -----------------------------------------------------------------------------


def test_a_second_browser_loads_the_cache_instead_of_building(browser, settings, monkeypatch):
    assert browser.stats.cache_path.is_file()
    assert browser.stats.cache_path.is_relative_to(settings.index_dir)

    def no_build(*args, **kwargs):
        raise AssertionError("the index was rebuilt")

    monkeypatch.setattr(index_module, "build_index", no_build)
    again = CutlassBrowser(settings)
    assert again.stats.from_cache and again.stats.build_seconds == 0
    assert again.stats.cache_path == browser.stats.cache_path
    assert again.stats.symbols == browser.stats.symbols
    assert again.find_definition("make_tiled_copy").definitions


def test_a_damaged_cache_is_ignored(tmp_path):
    bad = tmp_path / "index.json"
    bad.write_text("{not json")
    assert index_module._load(bad) is None
    bad.write_text('{"format": -1}')
    assert index_module._load(bad) is None


# --- find_definition -------------------------------------------------------------------------------------


def test_make_tiled_copy_is_a_cute_function_with_its_template_line(browser):
    result = browser.find_definition("make_tiled_copy")
    first = result.definitions[0]
    assert first.path.startswith("include/cute/") and first.kind == "function" and first.namespace == "cute"
    snippet = "\n".join(text for _, text in first.snippet)
    assert "template" in snippet and "make_tiled_copy(" in snippet
    assert dict(first.snippet)[first.line].lstrip().startswith("make_tiled_copy")
    assert "include/cute/" in small(result.render())


def test_a_namespaced_query_finds_struct_layout(browser):
    first = browser.find_definition("cute::Layout").definitions[0]
    assert (first.path, first.kind, first.namespace, first.specialization) == (
        "include/cute/layout.hpp", "struct", "cute", False)
    assert "struct Layout" in dict(first.snippet)[first.line]
    assert any(text.lstrip().startswith("template") for _, text in first.snippet)


def test_sm90_tma_load_is_in_an_sm90_copy_header(browser):
    first = browser.find_definition("SM90_TMA_LOAD").definitions[0]
    assert re.fullmatch(r"include/cute/(arch/copy|atom/copy_traits)_sm90\w*\.hpp", first.path)
    assert first.kind == "struct"


def test_the_primary_template_leads_its_specializations(browser):
    result = browser.find_definition("cutlass::gemm::collective::CollectiveMma")
    first = result.definitions[0]
    assert first.namespace == "cutlass::gemm::collective" and not first.specialization
    assert result.total > 10 and all(d.specialization for d in result.definitions[1:])
    assert len(result.definitions) <= 20
    small(result.render())


def test_an_unknown_symbol_gives_an_empty_result_and_advice(browser):
    result = browser.find_definition("NoSuchCuteThing")
    assert result.definitions == () and "No definition" in result.render()
    small(browser.find_definition("Layout").render())  # hundreds of definitions, still a short reply
    assert "make_tiled_copy" in browser.find_definition("make_tiled").render()  # similar names
    assert browser.find_definition("::").definitions == ()


# --- search ----------------------------------------------------------------------------------------------


def test_search_finds_warpgroup_arrive_definition_first(browser):
    result = browser.search("warpgroup_arrive")
    assert 0 < len(result.hits) <= 20 and result.total_hits >= len(result.hits)
    first = result.hits[0]
    assert first.path == "include/cute/arch/mma_sm90_gmma.hpp"
    assert "warpgroup_arrive" in dict(first.context)[first.line]
    assert len({h.path for h in result.hits}) > 5  # spread across files
    assert all(len(h.context) <= 3 for h in result.hits)
    small(result.render())


def test_search_words_may_sit_on_neighbouring_lines(browser):
    result = browser.search("make_tma_copy SM90_TMA_LOAD", limit=5)
    assert result.hits and len(result.hits) <= 5
    for hit in result.hits:
        window = browser.read_file(hit.path, hit.line - 2, hit.line + 2).lines
        assert all(any(w.lower() in line.lower() for line in window) for w in ("make_tma_copy", "sm90_tma_load"))


def test_search_regex_and_path_glob(browser):
    result = browser.search(r"warpgroup_wait<\d>", regex=True, path_glob="include/cutlass/gemm")
    assert result.hits and all(h.path.startswith("include/cutlass/gemm/") for h in result.hits)
    assert all(re.search(r"warpgroup_wait<\d>", dict(h.context)[h.line]) for h in result.hits)
    globbed = browser.search("tma copy", path_glob="include/cute/*")
    assert globbed.hits and all(h.path.startswith("include/cute/") for h in globbed.hits)
    assert "Invalid regular expression" in browser.search("(", regex=True).render()
    assert browser.search("qqqzzzxxy").hits == ()
    assert len(browser.search("copy", limit=1000).hits) == 20  # capped by max_results


# --- usages, listing, reading ----------------------------------------------------------------------------


def test_usages_exclude_definitions_and_group_by_file(browser):
    result = browser.find_usages("cute::make_tma_copy", limit=12)
    definitions = {(d.path, d.line) for d in browser.find_definition("make_tma_copy").definitions}
    assert result.total_hits > 10 and result.total_files > 3
    assert sum(len(f.lines) for f in result.files) <= 12
    for usage in result.files:
        assert usage.count >= len(usage.lines)
        for line, text in usage.lines:
            assert (usage.path, line) not in definitions and "make_tma_copy" in text
    small(result.render())
    assert browser.find_usages("NoSuchCuteThing").files == ()


def test_list_dir_shows_counts_and_sizes(browser):
    top = {e.name: e for e in browser.list_dir("").entries}
    assert top["include"].is_dir and top["include"].files > 500
    atom = {e.name: e for e in browser.list_dir("include/cute/atom").entries}
    assert atom["copy_traits_sm90_tma.hpp"].size > 10_000 and not atom["copy_traits_sm90_tma.hpp"].is_dir
    small(browser.list_dir("include/cute/arch").render())
    assert browser.list_dir("no/such/dir").entries == ()
    with pytest.raises(CutlassPathError):
        browser.list_dir("../..")


def test_read_file_numbers_clamps_and_accepts_include_paths(browser):
    part = browser.read_file("include/cute/layout.hpp", 99, 99)
    assert part.lines[0].startswith("struct Layout") and (part.start, part.end) == (99, 99)
    assert "99  struct Layout" in part.render()
    clamped = browser.read_file("cute/layout.hpp", -5, 10**9)
    assert clamped.path == "include/cute/layout.hpp"
    assert clamped.start == 1 and clamped.end == MAX_READ_LINES and "start=" in clamped.message
    tail = browser.read_file("include/cute/layout.hpp", 10**9)
    assert tail.end == tail.total_lines and len(tail.lines) == 1
    small(clamped.render())


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "include/../../etc/passwd", "~/.ssh/id_rsa"])
def test_read_file_refuses_paths_outside_the_tree(browser, path):
    with pytest.raises(CutlassPathError, match="absolute|'..'"):
        browser.read_file(path)


def test_read_file_of_a_missing_file_or_a_directory_says_so(browser):
    with pytest.raises(CutlassPathError, match="No file"):
        browser.read_file("include/cute/no_such_header.hpp")
    with pytest.raises(CutlassPathError, match="directory"):
        browser.read_file("include/cute")


# --- examples --------------------------------------------------------------------------------------------


def test_wgmma_examples_are_the_hopper_tutorials(browser):
    result = browser.examples("wgmma")
    top = [e.path for e in result.examples[:3]]
    assert {"examples/cute/tutorial/hopper/wgmma_sm90.cu", "examples/cute/tutorial/hopper/wgmma_tma_sm90.cu"} & set(top)
    assert all(e.summary and e.key_lines for e in result.examples)
    assert any("warpgroup" in text.lower() or "sm90_64x" in text.lower() for _, text in result.examples[0].key_lines)
    small(result.render())


@pytest.mark.parametrize(("topic", "expected"), [
    ("TMA", r"tma"), ("tiled copy", r"tiled_copy|sgemm|copy"), ("warp specialized", r"warp_?specialized"),
    ("gemm hopper", r"hopper|sm90"), ("epilogue", r"epilogue|gemm"), ("cluster", r"cluster|multicast|sm100|hopper"),
])
def test_examples_for_common_topics(browser, topic, expected):
    result = browser.examples(topic, limit=5)
    assert 0 < len(result.examples) <= 5
    assert any(re.search(expected, e.path, re.I) for e in result.examples)
    assert all(e.path.startswith("examples/") for e in result.examples)
    small(result.render())


def test_topics_expand_through_synonyms():
    groups = dict(expand("TMA with warp specialization"))
    assert "sm90_tma_load" in groups["tma"] and "make_tma_copy" in groups["tma"]
    assert "kerneltmawarpspecialized" in groups["warp specialized"]
    assert expand("") == []


def test_an_empty_topic_gives_advice(browser):
    assert browser.examples("").examples == () and "wgmma" in browser.examples("").render()


# --- the scanner on hand-written C++ and Python ----------------------------------------------------------

CPP = """\
#define MY_MACRO(x) do { x; } while (0)
namespace outer::inner {
// struct Commented { };
template <class T, class U = int>
struct Primary : Base<T>
{
  using value_type = T;
  CUTE_HOST_DEVICE constexpr
  auto
  member_function(T const& t = {}) const {
    auto s = "} not a brace {";
    return helper(t);
  }
};

template <class T>
struct Primary<T*, int> { };

template <class... Args>
CUTE_HOST_DEVICE
auto
free_function(Args const&... args)
{
  using Local = int;
  if (sizeof...(Args) > 0) { call(args...); }
}

enum class Mode : int { A, B };
void declared_only(int);
}  // namespace outer::inner

struct AfterNamespace { int x; };
"""


def test_scan_cpp_finds_definitions_with_their_scopes():
    found = {(s.name, s.kind, s.scope, s.specialization): s for s in scan_cpp(CPP)}
    names = {s.name for s in found.values()}
    assert "Commented" not in names and "declared_only" not in names and "helper" not in names
    assert "call" not in names and "sizeof" not in names
    primary = found[("Primary", "struct", "namespace", False)]
    assert (primary.line, primary.namespace) == (5, "outer::inner")
    assert found[("Primary", "struct", "namespace", True)].line == 17
    member = found[("member_function", "function", "member", False)]
    assert (member.line, member.parent) == (10, "Primary")
    assert found[("value_type", "alias", "member", False)].parent == "Primary"
    assert found[("free_function", "function", "namespace", False)].line == 22
    assert found[("Local", "alias", "local", False)].line == 24
    assert found[("Mode", "enum", "namespace", False)].line == 28
    assert found[("MY_MACRO", "macro", "namespace", False)].line == 1
    after = found[("AfterNamespace", "struct", "namespace", False)]
    assert (after.namespace, after.line) == ("", 32)


def test_scan_python_follows_indentation():
    source = "X = 1\n\nclass A:\n    def method(self):\n        def inner():\n            pass\n\n" \
             "@decorator\ndef top(a,\n        b):\n    y = 2\n"
    found = {s.name: s for s in scan_python(source, "pkg.mod")}
    assert set(found) == {"X", "A", "method", "inner", "top"}
    assert (found["method"].parent, found["method"].scope) == ("A", "member")
    assert found["inner"].scope == "local" and found["top"].line == 9
    assert found["top"].namespace == "pkg.mod" and found["X"].kind == "variable"
