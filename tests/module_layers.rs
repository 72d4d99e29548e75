//! The library's layers: the lessons (one module per chapter, and what they
//! share) never import the support around them (the engine, the CLI, plots,
//! files), and no two modules import each other, directly or round a loop.
//! Read from the source, so a new `use crate::…` that breaks the rule fails here
//! with the edge that broke it.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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

/// What runs, stores, draws or speeds up the lessons.
const SUPPORT: &[&str] = &[
    "bench",
    "checkpoint",
    "cli",
    "engine",
    "interrupt",
    "graph",
    "history",
    "limits",
    "memory",
    "optim",
    "output",
    "plot",
    "precision",
    "sys",
];

/// Module → the crate modules it names (`crate::x`), from src/*.rs.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_none_or(|e| e != "rs") || name == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
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
        graph.insert(name.to_string(), uses);
    }
    graph
}

#[test]
fn every_module_is_a_lesson_or_support() {
    for module in imports().keys() {
        assert!(
            LESSONS.contains(&module.as_str()) || SUPPORT.contains(&module.as_str()),
            "src/{module}.rs is neither a lesson nor support: add it to one list \
             in tests/module_layers.rs"
        );
    }
}

#[test]
fn lessons_never_import_support() {
    let mut wrong = vec![];
    for (module, uses) in imports() {
        if LESSONS.contains(&module.as_str()) {
            for used in uses.iter().filter(|u| SUPPORT.contains(&u.as_str())) {
                wrong.push(format!("{module} -> {used}"));
            }
        }
    }
    assert!(wrong.is_empty(), "lessons importing support: {wrong:?}");
}

#[test]
fn no_module_imports_round_a_loop() {
    let graph = imports();
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
    for m in graph.keys() {
        if let Some(cycle) = visit(m, &graph, &mut vec![], &mut done) {
            panic!("an import loop: {}", cycle.join(" -> "));
        }
    }
}
