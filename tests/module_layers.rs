//! The layers of the course. The lesson (`src/`, crate `transformer_course`)
//! holds one module per chapter and what they share, and depends on nothing of
//! the course's own; the workbench (`workbench/src/`) holds what runs, stores,
//! draws or speeds up the lesson, and depends on it. The compiler keeps the
//! direction (a lesson module cannot name the workbench); these tests keep the
//! rest: nothing but lessons in `src/`, no dependency the lesson does not use,
//! and no import loop inside either crate.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What chapters teach, and what they share.
const LESSONS: &[&str] = &[
    "config",
    "layers",
    "vocab",
    "embedding",
    "attention",
    "feed_forward",
    "encoder",
    "decoder",
    "transformer",
    "mask_checks",
    "data",
    "train",
    "generate",
    "viz",
    "sdpa",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `.rs` files of a crate's src/ folder (not lib.rs), by module name.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_none_or(|e| e != "rs") || name == "lib" {
            continue;
        }
        found.insert(name.to_string(), std::fs::read_to_string(&path).unwrap());
    }
    found
}

/// Module → the modules of its own crate it names (`crate::x`).
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (name, text) in modules(src) {
        let mut uses = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let module = &rest[..end];
            if !module.is_empty() && module != name {
                uses.insert(module.to_string());
            }
        }
        graph.insert(name, uses);
    }
    graph
}

#[test]
fn src_holds_only_lessons() {
    let src = repo().join("src");
    let others: Vec<String> = modules(&src)
        .into_keys()
        .filter(|m| !LESSONS.contains(&m.as_str()))
        .collect();
    assert!(
        others.is_empty(),
        "src/ is the lesson, but these modules are not lessons: {others:?}. \
         Support code belongs in workbench/src/; a new lesson module goes into \
         LESSONS in tests/module_layers.rs"
    );
    let missing: Vec<&str> = LESSONS
        .iter()
        .copied()
        .filter(|m| !src.join(format!("{m}.rs")).exists())
        .collect();
    assert!(missing.is_empty(), "lessons missing from src/: {missing:?}");
}

/// The names in a `[dependencies]` table of a Cargo.toml, as Rust spells them.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut names = vec![];
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', ' ']).next().unwrap();
            names.push(name.replace('-', "_"));
        }
    }
    names
}

#[test]
fn the_lesson_lists_only_dependencies_it_uses() {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let listed = dependencies(&manifest);
    assert!(
        listed.contains(&"tch".to_string()),
        "read no dependencies: {listed:?}"
    );
    let code: String = modules(&repo().join("src")).into_values().collect();
    let unused: Vec<&String> = listed
        .iter()
        .filter(|name| !code.contains(&format!("{name}::")))
        .collect();
    assert!(
        unused.is_empty(),
        "the lesson's Cargo.toml lists dependencies that no file in src/ uses: \
         {unused:?}; the workbench's belong in workbench/Cargo.toml"
    );
}

#[test]
fn the_workbench_depends_on_the_lesson() {
    let manifest =
        std::fs::read_to_string(repo().join("workbench/Cargo.toml")).unwrap();
    assert!(
        dependencies(&manifest).contains(&"transformer_course".to_string()),
        "workbench/Cargo.toml does not name the lesson"
    );
    let code: String = modules(&repo().join("workbench/src"))
        .into_values()
        .collect();
    assert!(
        code.contains("transformer_course::"),
        "the workbench uses no lesson"
    );
}

#[test]
fn no_module_imports_round_a_loop() {
    for src in [repo().join("src"), repo().join("workbench/src")] {
        if let Some(cycle) = import_loop(&imports(&src)) {
            panic!(
                "an import loop in {}: {}",
                src.display(),
                cycle.join(" -> ")
            );
        }
    }
}

/// A loop among the imports, if there is one.
fn import_loop(
    graph: &BTreeMap<String, BTreeSet<String>>,
) -> Option<Vec<String>> {
    // Depth-first search from every module; a module met again on the current
    // path closes a loop.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if !done.insert(m.to_string()) {
            return None;
        }
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut vec![], &mut done))
}
