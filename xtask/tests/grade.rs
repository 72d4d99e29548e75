//! `cargo xtask grade` on three submissions: the answer key (full marks), the blank
//! student edition (zero), and a crafted one with an exercise solved, one that does
//! not compile, one that never finishes, one whose test file the student edited to
//! pass a wrong answer, and one that panics. Five exercises of chapters 06 and 08, to
//! keep it short: the build goes to target/mutants (shared with `cargo xtask
//! mutants`), so after the first build each submission recompiles only the
//! exercises crate; the exercise that loops costs the 30 s time limit.
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod common;
use common::copy_dir;
use xtask::grade::{grade, Options, Verdict};
use xtask::student::{blank_text, EXERCISE_SRC, SOLUTIONS};

/// The grading tests share one workspace copy and the sandbox's user id: one at a
/// time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn root() -> PathBuf {
    xtask::workspace_root()
}

/// A submission as a student hands it in: the exercises and their tests.
fn submission(dir: &Path) {
    copy_dir(&root().join(EXERCISE_SRC), &dir.join(EXERCISE_SRC));
    copy_dir(
        &root().join("exercises/tests"),
        &dir.join("exercises/tests"),
    );
}

/// Replaces the body of region `name` (hints and all) in `file` by `body`.
fn answer(file: &Path, name: &str, body: &str) {
    let text = fs::read_to_string(file).unwrap();
    let lines: Vec<String> = body.lines().map(str::to_string).collect();
    let out = xtask::mutants::swap_in(&text, name, &lines, "test").unwrap();
    fs::write(file, out).unwrap();
}

/// A minimal CSV reader (quoted fields, doubled quotes), enough to check that the
/// file is well formed: every row has the header's number of fields.
fn read_csv(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut field) = (vec![], vec![], String::new());
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    rows
}

/// Whether to grade in the sandbox: yes where bubblewrap works (CI must have it);
/// elsewhere these tests still check the marking, without one.
fn sandboxed() -> bool {
    match xtask::sandbox::check() {
        Ok(()) => true,
        Err(e) if std::env::var_os("CI").is_some() => panic!("{e:#}"),
        Err(e) => {
            eprintln!("graded without a sandbox: {e:#}");
            false
        }
    }
}

fn verdict(r: &xtask::grade::Report, id: &str) -> Verdict {
    r.rows.iter().find(|(e, _)| e.id == id).unwrap().1.clone()
}

#[test]
fn the_grader_gives_each_exercise_its_own_verdict() {
    if root().join(SOLUTIONS).exists()
        || !root().join("exercises/mutants").is_dir()
    {
        eprintln!("skipped: a student edition has no answer key to grade");
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("grade-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let class = tmp.join("class");

    let key = class.join("answer_key");
    submission(&key);

    let blank = class.join("blank");
    submission(&blank);
    for file in fs::read_dir(blank.join(EXERCISE_SRC)).unwrap() {
        let file = file.unwrap().path();
        if file.extension().is_some_and(|e| e == "rs") {
            let text = fs::read_to_string(&file).unwrap();
            let (blanked, _) = blank_text(&text, "blank").unwrap();
            fs::write(&file, blanked).unwrap();
        }
    }

    // ex06_padding_mask stays solved.
    let crafted = class.join("crafted");
    submission(&crafted);
    let ch06 = crafted.join(EXERCISE_SRC).join("ch06_transformer.rs");
    let ch08 = crafted.join(EXERCISE_SRC).join("ch08_reverse_data.rs");
    answer(
        &ch06,
        "ex06_causal_mask",
        "    let mask: Tensor = l + 1;\n    mask",
    );
    answer(&ch06, "ex06_param_count", "    let mut n = c.d_model;\n    loop {\n        n = n.wrapping_mul(3) | 1;\n        std::hint::black_box(n);\n    }");
    // A wrong answer (the reversal instead of the copy), and a test file edited so
    // that it passes.
    answer(&ch08, "ex08_copy_dataset", "    make_dataset(n, seed)");
    fs::write(
        crafted.join("exercises/tests/exercises_ch08.rs"),
        "#[test]\nfn ex08_copy_dataset_is_fine() {}\n#[test]\nfn ex08_lm_layout_is_fine() {}\n",
    )
    .unwrap();
    answer(
        &ch08,
        "ex08_lm_layout",
        "    let s = digits.to_vec();\n    let last = s[s.len()];\n    ([last; LM_LEN - 1], [PAD_ID; LM_LEN - 1])",
    );

    let opts = Options {
        timeout: Duration::from_secs(30),
        only: vec!["ex06_".into(), "ex08_".into()],
        sandbox: sandboxed(),
        ..Options::new(tmp.join("out"), root().join("target/mutants"))
    };
    // The two slips rustc reports outside the region: a body ending in `;` (at
    // the signature's return type) and an unclosed `{` (at the end of the file).
    let semicolon = class.join("semicolon");
    submission(&semicolon);
    let ch06 = semicolon.join(EXERCISE_SRC).join("ch06_transformer.rs");
    answer(
        &ch06,
        "ex06_padding_mask",
        "    let (b, l) = ids.size2().unwrap();\n    ids.eq(0).view([b, 1, 1, l]);",
    );
    let unclosed = class.join("unclosed");
    submission(&unclosed);
    let ch06 = unclosed.join(EXERCISE_SRC).join("ch06_transformer.rs");
    answer(
        &ch06,
        "ex06_causal_mask",
        "    let idx = Tensor::arange(l, (Kind::Int64, device));\n    if l > 0 {\n    idx.unsqueeze(0).gt_tensor(&idx.unsqueeze(1)).view([1, 1, l, l])",
    );

    let reports = grade(&root(), std::slice::from_ref(&class), &opts).unwrap();
    let names: Vec<&str> = reports.iter().map(|r| r.student.as_str()).collect();
    assert_eq!(
        names,
        ["answer_key", "blank", "crafted", "semicolon", "unclosed"]
    );
    let [key, blank, crafted, semicolon, unclosed] = &reports[..] else {
        unreachable!()
    };
    for (r, slip) in [
        (semicolon, "ex06_padding_mask"),
        (unclosed, "ex06_causal_mask"),
    ] {
        let fails: Vec<&str> = r
            .rows
            .iter()
            .filter(|(_, v)| !v.full_marks())
            .map(|(e, _)| e.id.as_str())
            .collect();
        assert_eq!(fails, [slip], "one slip costs one exercise: {r:#?}");
        assert!(
            matches!(verdict(r, slip), Verdict::DoesNotCompile { ref error }
                if error.contains("outside the regions; it goes when this exercise's code is replaced")),
            "{:?}",
            verdict(r, slip)
        );
    }

    assert_eq!(key.rows.len(), 5);
    assert_eq!(key.points(), key.max_points(), "{key:#?}");
    assert!(key.edited_tests.is_empty() && key.outside_changes.is_empty());

    assert_eq!(blank.points(), 0);
    assert!(
        blank.rows.iter().all(|(_, v)| *v == Verdict::NotStarted),
        "{blank:#?}"
    );

    let v = |id| verdict(crafted, id);
    assert!(
        v("ex06_padding_mask").full_marks(),
        "{:?}",
        v("ex06_padding_mask")
    );
    assert!(
        matches!(v("ex06_causal_mask"), Verdict::DoesNotCompile { ref error }
            if error.contains("ch06_transformer.rs")),
        "{:?}",
        v("ex06_causal_mask")
    );
    assert_eq!(v("ex06_param_count"), Verdict::TimedOut { secs: 30 });
    assert!(
        matches!(v("ex08_copy_dataset"), Verdict::Failed { .. }),
        "graded by the pristine tests, the wrong answer fails: {:?}",
        v("ex08_copy_dataset")
    );
    assert_eq!(
        crafted.edited_tests,
        ["exercises/tests/exercises_ch08.rs (changed)"]
    );
    assert!(
        matches!(v("ex08_lm_layout"), Verdict::Failed { ref reason, .. }
            if reason.contains("index out of bounds")),
        "{:?}",
        v("ex08_lm_layout")
    );
    let stars = |id: &str| {
        crafted
            .rows
            .iter()
            .find(|(e, _)| e.id == id)
            .unwrap()
            .0
            .stars
    };
    assert_eq!(
        crafted.points(),
        stars("ex06_padding_mask"),
        "only the solved exercise earns its weight"
    );

    let csv = fs::read_to_string(opts.out.join("grades.csv")).unwrap();
    let rows = read_csv(&csv);
    assert_eq!(rows.len(), 6, "{csv}");
    assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{csv}");
    assert_eq!(
        rows[0][1],
        format!("ex06_padding_mask (weight {})", stars("ex06_padding_mask"))
    );
    assert_eq!(rows[3][0], "crafted");
    let max = key.max_points().to_string();
    assert_eq!(rows[1][6..9], [max.as_str(), max.as_str(), "100.0"]);
    assert!(opts.out.join("crafted.txt").is_file());
    let _ = fs::remove_dir_all(&tmp);
}

#[test]
fn dependencies_are_found_in_the_code_and_the_tests() {
    let all = xtask::catalog::catalog(&root()).unwrap();
    let deps = xtask::grade::dependencies(&root(), &all).unwrap();
    let on = |id: &str| deps[id].iter().cloned().collect::<Vec<_>>();
    let shown: Vec<String> = deps
        .iter()
        .filter(|(_, d)| !d.is_empty())
        .map(|(id, d)| format!("{id} <- {d:?}"))
        .collect();
    eprintln!("{}", shown.join("\n"));
    // The course's four: the language model is made of blocks; the budget
    // counts the SwiGLU's parameters; beam search's test scores with
    // sequence_log_prob; chapter 14's comparison decodes with beam search (and
    // so with what it builds on). `attention::scaled_dot_product`, the library's, is not
    // ex02_by_hand's `scaled_dot_product`.
    assert_eq!(
        shown,
        [
            "ex03_param_budget <- {\"ex03_swiglu\"}",
            "ex05_decoder_only_lm <- {\"ex05_decoder_only_block\"}",
            "ex10_beam_search <- {\"ex10_sequence_log_prob\"}",
            "ex14_beam_dates <- {\"ex10_beam_search\", \"ex10_sequence_log_prob\"}",
        ]
    );
    assert_eq!(on("ex05_decoder_only_lm"), ["ex05_decoder_only_block"]);
}

/// A wrong but compiling decoder-only block costs the block and not the language
/// model built of it, which is graded with the reference block, and says so.
#[test]
fn an_exercise_is_graded_with_the_reference_of_what_it_builds_on() {
    if root().join(SOLUTIONS).exists()
        || !root().join("exercises/mutants").is_dir()
    {
        eprintln!("skipped: a student edition has no answer key to grade");
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("grade-deps-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let class = tmp.join("class");
    let sub = class.join("wrong_block");
    submission(&sub);
    answer(
        &sub.join(EXERCISE_SRC).join("ch05_decoder.rs"),
        "ex05_decoder_only_block",
        "        let (_, w) = self.self_mha.forward(x, x, x, Some(self_mask), train);\n        (x.shallow_clone(), w)",
    );
    let opts = Options {
        timeout: Duration::from_secs(300),
        only: vec!["ex05_decoder_only".into()],
        sandbox: sandboxed(),
        ..Options::new(tmp.join("out"), root().join("target/mutants"))
    };
    let reports = grade(&root(), std::slice::from_ref(&class), &opts).unwrap();
    let r = &reports[0];
    assert!(
        matches!(
            verdict(r, "ex05_decoder_only_block"),
            Verdict::Failed { .. }
        ),
        "{r:#?}"
    );
    assert!(verdict(r, "ex05_decoder_only_lm").full_marks(), "{r:#?}");
    assert_eq!(
        r.with_reference["ex05_decoder_only_lm"],
        ["ex05_decoder_only_block"]
    );
    let csv = fs::read_to_string(opts.out.join("grades.csv")).unwrap();
    assert!(
        csv.contains("ex05_decoder_only_lm: passed (") 
            && csv.contains("(graded with the reference for ex05_decoder_only_block in place of yours)"),
        "{csv}"
    );
    let _ = fs::remove_dir_all(&tmp);
}
