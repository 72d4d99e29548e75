//! The layers of the course. The lesson (`src/`, crate `transformer_course`)
//! holds one module per chapter and what they share, and depends on nothing of
//! the course's own; the workbench (`workbench/src/`) holds what runs, stores,
//! draws or speeds up the lesson, and depends on it. The compiler keeps the
//! direction (a lesson module cannot name the workbench); these tests keep the
//! rest: nothing but lessons in `src/`, no dependency the lesson does not use,
//! no import loop inside either crate, and one training step: chapter 09's.
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
    "dates",
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

/// Where training calls autograd's backward pass: chapter 09's
/// `Trainer::train_step`, once.
const THE_STEP: &str = "src/train.rs";

/// The other Rust files that run a backward pass, with how many calls each
/// holds and why none of them belongs in the lesson's step. An exact count, so
/// that a new call in a listed file needs a reason of its own.
const EXCEPTIONS: &[(&str, usize, &str)] = &[
    (
        "tests/tch_primer.rs",
        2,
        "the primer's autograd on one number and SGD on one weight: the calls \
         the step is made of, taught before there is a model",
    ),
    (
        "tests/fused_adam.rs",
        1,
        "gives every variable a prescribed gradient, to compare two Adams; \
         nothing is learned",
    ),
    (
        "tests/model_structure.rs",
        1,
        "three Adam steps on a made-up loss: does the PAD row of the embedding \
         stay zero?",
    ),
    (
        "exercises/tests/exercises_ch01.rs",
        1,
        "three Adam steps on a made-up loss: do the rows of the student's \
         learned table that were used move, and only those?",
    ),
    (
        "exercises/tests/exercises_ch04.rs",
        1,
        "a gradient check: every parameter of the student's layer takes part",
    ),
    (
        "exercises/tests/exercises_ch09.rs",
        2,
        "a gradient check: the student's loss against libtorch's",
    ),
    (
        "exercises/tests/exercises_ch05.rs",
        1,
        "trains the student's decoder-only language model, which has no \
         source: not a model the step's forward(src, tgt_in) can take",
    ),
    (
        "exercises/src/bin/exercise_experiments.rs",
        1,
        "trains the norms experiment's encoder-only tagger, which has no \
         decoder input: not a model the step's forward(src, tgt_in) can take",
    ),
];

/// Whether the code of `line`, its comment cut off, calls a backward pass:
/// `backward`, `backward_step`, `run_backward`, `f_backward` and the rest, each
/// followed by its argument list. A function whose name has the word in it is
/// defined, not called (`fn ..._backward_...(`).
fn runs_autograd(line: &str) -> bool {
    let code = line.split("//").next().unwrap();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices("backward").any(|(i, _)| {
        let start = code[..i].trim_end_matches(word);
        let rest = &code[i..];
        let end = rest.find(|c| !word(c)).unwrap_or(rest.len());
        rest[end..].starts_with('(') && !start.trim_end().ends_with("fn")
    })
}

/// The `.rs` files under `dir`, at any depth.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The folders that hold the workspace's Rust code.
const RUST_FOLDERS: [&str; 7] = [
    "src",
    "workbench",
    "chapters",
    "scripts",
    "tests",
    "exercises",
    "xtask",
];

/// Every backward call in the workspace's Rust code, as (path from the
/// repository root, line number from 1).
fn autograd_calls() -> Vec<(String, usize)> {
    let root = repo();
    let mut files = vec![];
    for dir in RUST_FOLDERS {
        rust_files(&root.join(dir), &mut files);
    }
    let mut calls = vec![];
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.strip_prefix(&root).unwrap();
        let name = name.to_string_lossy().replace('\\', "/");
        for (i, line) in text.lines().enumerate() {
            if runs_autograd(line) {
                calls.push((name.clone(), i + 1));
            }
        }
    }
    calls
}

#[test]
fn only_the_lessons_step_trains() {
    let calls = autograd_calls();
    let in_file = |file: &str| -> Vec<usize> {
        calls.iter().filter(|c| c.0 == file).map(|c| c.1).collect()
    };
    // The one allowed call is there, inside train_step: the scan sees calls.
    let step = std::fs::read_to_string(repo().join(THE_STEP)).unwrap();
    let lines: Vec<&str> = step.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains("fn train_step("))
        .expect("chapter 09 has a train_step");
    let end = start
        + lines[start..]
            .iter()
            .position(|l| *l == "    }")
            .expect("train_step ends");
    let ours = in_file(THE_STEP);
    assert!(
        ours.len() == 1 && (start + 1..=end + 1).contains(&ours[0]),
        "{THE_STEP} should run a backward pass once, in train_step (lines \
         {}-{}), and runs it at lines {ours:?}",
        start + 1,
        end + 1,
    );
    for (file, count, why) in EXCEPTIONS {
        let found = in_file(file);
        assert_eq!(
            found.len(),
            *count,
            "{file} was listed with {count} backward calls ({why}); it has \
             them at lines {found:?}. A new one needs its own reason here, a \
             gone one its entry taken out"
        );
    }
    let listed = |file: &str| EXCEPTIONS.iter().any(|e| e.0 == file);
    let others: Vec<String> = calls
        .iter()
        .filter(|c| c.0 != THE_STEP && !listed(&c.0))
        .map(|c| format!("{}:{}", c.0, c.1))
        .collect();
    assert!(
        others.is_empty(),
        "a backward pass outside chapter 09's step: {others:?}. Every \
         training run goes through Trainer::train_step (src/train.rs), so \
         that what the reader studies is what every run does: give the model \
         Seq2Seq and hold it in a Trainer, as workbench/src/ablation.rs does. \
         A call that trains nothing (a gradient check) goes into EXCEPTIONS \
         in tests/module_layers.rs, with its reason"
    );
}
