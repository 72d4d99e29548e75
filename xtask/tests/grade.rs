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

use xtask::grade::{grade, Options, Verdict};
use xtask::student::{blank_text, EXERCISE_SRC, SOLUTIONS};

fn root() -> PathBuf {
    xtask::workspace_root()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).unwrap();
        }
    }
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

#[test]
fn the_grader_gives_each_exercise_its_own_verdict() {
    if root().join(SOLUTIONS).exists()
        || !root().join("exercises/mutants").is_dir()
    {
        eprintln!("skipped: a student edition has no answer key to grade");
        return;
    }
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
        out: tmp.join("out"),
        target_dir: root().join("target/mutants"),
        timeout: Duration::from_secs(30),
        memory_mb: 4096,
        only: vec!["ex06_".into(), "ex08_".into()],
    };
    let reports = grade(&root(), std::slice::from_ref(&class), &opts).unwrap();
    let names: Vec<&str> = reports.iter().map(|r| r.student.as_str()).collect();
    assert_eq!(names, ["answer_key", "blank", "crafted"]);
    let [key, blank, crafted] = &reports[..] else {
        unreachable!()
    };
    let verdict = |r: &xtask::grade::Report, id: &str| -> Verdict {
        r.rows.iter().find(|(e, _)| e.id == id).unwrap().1.clone()
    };

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
    assert_eq!(rows.len(), 4, "{csv}");
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
