//! `// ANCHOR: name` … `// ANCHOR_END: name` regions, read the way mdBook reads
//! them for `{{#include FILE:name}}`, and the exercise regions cut out of them.
use std::collections::HashMap;

/// One marker on a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker<'a> {
    pub end: bool,
    pub name: &'a str,
}

/// The markers on a line, in order, as mdBook finds them: `ANCHOR: name` or
/// `ANCHOR_END: name` anywhere in the line, the name made of word characters and
/// dashes. A line may hold several (a doc comment naming a start and an end, say).
pub fn markers(line: &str) -> Vec<Marker<'_>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = line[from..].find("ANCHOR") {
        let at = from + i;
        let rest = &line[at..];
        let (end, tag_len) = if rest.starts_with("ANCHOR_END:") {
            (true, "ANCHOR_END:".len())
        } else if rest.starts_with("ANCHOR:") {
            (false, "ANCHOR:".len())
        } else {
            from = at + "ANCHOR".len();
            continue;
        };
        let after = rest[tag_len..].trim_start();
        let len = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(after.len());
        if len > 0 {
            found.push(Marker {
                end,
                name: &after[..len],
            });
        }
        from = at + tag_len;
    }
    found
}

/// Every region of `text`: name → the lines mdBook would include (marker lines of
/// any anchor left out). The first region of a name wins, as in mdBook.
pub fn regions(text: &str) -> HashMap<String, Vec<String>> {
    let mut done: HashMap<String, Vec<String>> = HashMap::new();
    let mut open: HashMap<String, Vec<String>> = HashMap::new();
    for line in text.lines() {
        let found = markers(line);
        if found.is_empty() {
            open.values_mut()
                .for_each(|lines| lines.push(line.to_string()));
        }
        for m in found {
            if !m.end {
                open.insert(m.name.to_string(), Vec::new());
            } else if let Some(lines) = open.remove(m.name) {
                done.entry(m.name.to_string()).or_insert(lines);
            }
        }
    }
    done
}

/// Markers without their partner: (1-based line, message).
pub fn unpaired(text: &str) -> Vec<(usize, String)> {
    let mut problems = Vec::new();
    let mut open: Vec<(String, usize)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for m in markers(line) {
            let name = m.name;
            if !m.end {
                open.push((name.to_string(), i + 1));
            } else if let Some(k) = open.iter().rposition(|(n, _)| n == name) {
                open.remove(k);
            } else {
                let msg = format!(
                    "`ANCHOR_END: {name}` has no `ANCHOR: {name}` before it"
                );
                problems.push((i + 1, msg));
            }
        }
    }
    for (name, line) in open {
        problems.push((
            line,
            format!("`ANCHOR: {name}` has no `ANCHOR_END: {name}` after it"),
        ));
    }
    problems.sort();
    problems
}

/// Each `ANCHOR: name` marker: (name, 1-based line), in order.
pub fn openings(text: &str) -> Vec<(&str, usize)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for m in markers(line).into_iter().filter(|m| !m.end) {
            found.push((m.name, i + 1));
        }
    }
    found
}

/// Markers on a line with code before them: (1-based line, message). rustfmt
/// moves a comment that follows code onto the code's line (`x } // ANCHOR_END:
/// a`), and mdBook leaves every marker line out of a listing, so that code
/// would silently vanish from the book.
pub fn behind_code(text: &str) -> Vec<(usize, String)> {
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(first) = markers(line).into_iter().next() else {
            continue;
        };
        let at = line.find("ANCHOR").unwrap_or(0);
        let before = &line[..at];
        // The code is what comes before the comment that holds the marker.
        let code = before.rfind("//").map_or(before, |c| &before[..c]).trim();
        let comment = ["//", "/*", "*"].iter().any(|c| code.starts_with(c));
        if code.is_empty() || comment {
            continue;
        }
        let tag = if first.end { "ANCHOR_END" } else { "ANCHOR" };
        problems.push((
            i + 1,
            format!(
                "`{tag}: {}` shares its line with code (`{code}`), which mdBook \
                 leaves out of the listing: put the marker on a line of its own",
                first.name
            ),
        ));
    }
    problems
}

/// Whether `name` is an exercise id: `exNN_` followed by lower-case letters,
/// digits and underscores.
pub fn is_exercise_id(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() > 5
        && name.starts_with("ex")
        && b[2].is_ascii_digit()
        && b[3].is_ascii_digit()
        && b[4] == b'_'
        && name[5..]
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// One exercise region of a source file.
#[derive(Debug, Clone, PartialEq)]
pub struct Exercise {
    /// `exNN_name`.
    pub name: String,
    /// 1-based line of the opening marker.
    pub line: usize,
    /// The `// HINT:` lines right after the opening marker.
    pub hints: Vec<String>,
    /// Everything after the hints up to the closing marker.
    pub body: Vec<String>,
}

impl Exercise {
    /// "07" for ex07_encoder_lookahead.
    pub fn chapter(&self) -> &str {
        &self.name[2..4]
    }
}

/// A source file cut into the text outside the exercise regions and the regions.
#[derive(Debug)]
pub struct ExerciseFile {
    /// Every line outside the regions, the marker lines included.
    pub outside: Vec<String>,
    pub exercises: Vec<Exercise>,
}

/// An exercise marker: a whole line `// ANCHOR: exNN_name` (or `_END`).
fn exercise_marker<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    let rest = line
        .trim_start()
        .strip_prefix("// ")?
        .strip_prefix(tag)?
        .trim();
    is_exercise_id(rest).then_some(rest)
}

/// Reads the exercise regions of `text` (`what` names it in errors). Regions must
/// sit inside a function body (indented), close in order and not nest.
pub fn exercises(text: &str, what: &str) -> Result<ExerciseFile, String> {
    let (mut outside, mut exercises) = (vec![], vec![]);
    let mut open: Option<Exercise> = None;
    for (i, line) in text.lines().enumerate() {
        let at = format!("{what}:{}", i + 1);
        let start = exercise_marker(line, "ANCHOR:");
        let end = exercise_marker(line, "ANCHOR_END:");
        match (&mut open, start, end) {
            (None, Some(name), _) => {
                if !line.starts_with("    ") {
                    return Err(format!(
                        "{at}: exercise marker '{name}' must sit inside a function body (indented)"
                    ));
                }
                outside.push(line.to_string());
                let (name, line) = (name.to_string(), i + 1);
                open = Some(Exercise {
                    name,
                    line,
                    hints: vec![],
                    body: vec![],
                });
            }
            (None, None, Some(name)) => {
                return Err(format!(
                    "{at}: ANCHOR_END: {name} without its ANCHOR"
                ))
            }
            (None, None, None) => outside.push(line.to_string()),
            (Some(r), Some(name), _) => {
                return Err(format!(
                    "{at}: ANCHOR: {name} opened inside region {}",
                    r.name
                ))
            }
            (Some(r), None, Some(name)) => {
                if name != r.name {
                    return Err(format!(
                        "{at}: ANCHOR_END: {name} closes region {}",
                        r.name
                    ));
                }
                exercises.extend(open.take());
                outside.push(line.to_string());
            }
            (Some(r), None, None) => {
                if r.body.is_empty()
                    && line.trim_start().starts_with("// HINT:")
                {
                    r.hints.push(line.to_string());
                } else {
                    r.body.push(line.to_string());
                }
            }
        }
    }
    match open {
        Some(r) => Err(format!("{what}: ANCHOR: {} is never closed", r.name)),
        None => Ok(ExerciseFile { outside, exercises }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_found_like_mdbook_finds_them() {
        let m = |line| {
            markers(line)
                .into_iter()
                .map(|m| (m.end, m.name))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            m("    // ANCHOR_END: split_merge"),
            vec![(true, "split_merge")]
        );
        assert_eq!(m("// ANCHOR: a-b_c rest"), vec![(false, "a-b_c")]);
        assert_eq!(
            m("//! between `// ANCHOR: x` and `// ANCHOR_END: x`"),
            vec![(false, "x"), (true, "x")]
        );
        assert_eq!(m("let anchor = 1; // ANCHORED"), vec![]);
    }

    #[test]
    fn regions_leave_out_every_marker_line() {
        let text = "a\n// ANCHOR: outer\nb\n// ANCHOR: inner\nc\n// ANCHOR_END: inner\nd\n// ANCHOR_END: outer\n";
        let r = regions(text);
        assert_eq!(r["outer"], ["b", "c", "d"]);
        assert_eq!(r["inner"], ["c"]);
        assert!(unpaired(text).is_empty());
        let broken = "// ANCHOR: a\nx\n// ANCHOR_END: b\n";
        let problems = unpaired(broken);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].1.contains("ANCHOR: a"));
        assert!(problems[1].1.contains("ANCHOR_END: b"));
    }

    #[test]
    fn markers_behind_code_are_found() {
        let text = "fn f() {\n    1 } // ANCHOR_END: a\nlet s = 2; // ANCHOR: b\n    // ANCHOR: c\n//! between `// ANCHOR: x` and `// ANCHOR_END: x`\n/* ANCHOR: d */\n";
        let found = behind_code(text);
        let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [2, 3], "{found:?}");
        assert!(found[0]
            .1
            .contains("`ANCHOR_END: a` shares its line with code (`1 }`)"));
        assert!(found[1].1.contains("`ANCHOR: b`"));
        assert_eq!(openings(text), [("b", 3), ("c", 4), ("x", 5), ("d", 6)]);
    }

    #[test]
    fn exercise_ids() {
        assert!(is_exercise_id("ex07_weight_on_pad"));
        assert!(!is_exercise_id("ex7_weight"));
        assert!(!is_exercise_id("mha_forward"));
        assert!(!is_exercise_id("ex07_"));
    }

    #[test]
    fn broken_exercise_markers_are_reported() {
        let cases = [
            ("fn f() {\n    // ANCHOR: ex01_a\n    // HINT: h\n    1\n}\n", "never closed"),
            ("fn f() {\n    1\n    // ANCHOR_END: ex01_a\n}\n", "without its ANCHOR"),
            ("fn f() {\n    // ANCHOR: ex01_a\n    // ANCHOR_END: ex01_b\n}\n", "closes region ex01_a"),
            ("// ANCHOR: ex01_a\nfn f() {}\n// ANCHOR_END: ex01_a\n", "inside a function body"),
        ];
        for (text, expected) in cases {
            let err = exercises(text, "t.rs").expect_err(expected);
            assert!(err.contains(expected), "{err}");
        }
        let good = "fn f() -> i32 {\n    // ANCHOR: ex01_a\n    // HINT: one\n    // HINT: two\n    let x = 1;\n    x\n    // ANCHOR_END: ex01_a\n}\n";
        let p = exercises(good, "good.rs").unwrap();
        assert_eq!(p.exercises.len(), 1);
        assert_eq!(p.exercises[0].hints.len(), 2);
        assert_eq!(p.exercises[0].body, ["    let x = 1;", "    x"]);
        assert_eq!(p.exercises[0].chapter(), "01");
    }
}
