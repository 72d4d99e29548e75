//! `cargo xtask plan`: planning figures for a teacher, counted from the book and the
//! exercises, with the rule of thumb that turns them into minutes printed above them.
//!
//! Per chapter: the words of prose on its page (the exercise page it includes
//! counted in, code blocks and program output left out), the lines of code and output
//! it shows (every include resolved), and an estimate of the time to read it. Per
//! exercise: its stars, the lines of its reference answer (code lines, no comments
//! or blank lines) and an estimate of the time to do it. These are estimates from a
//! stated rule, not measurements of students: the rule is printed with them.
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::anchors;
use crate::book::{directives, split_include_arg};
use crate::catalog::catalog;
use crate::student::{EXERCISE_SRC, SOLUTIONS};

/// Words of technical prose read in a minute.
pub const WORDS_PER_MINUTE: usize = 150;
/// Lines of code or program output read in a minute.
pub const LINES_PER_MINUTE: usize = 12;
/// Minutes an exercise takes before its answer's length counts: ★, ★★, ★★★.
pub const BASE_MINUTES: [usize; 3] = [10, 25, 60];
/// Minutes per line of the reference answer.
pub const MINUTES_PER_LINE: usize = 2;

/// What a page shows: words of prose and lines of code or output.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Size {
    pub words: usize,
    pub lines: usize,
}

/// `n` rounded up to a multiple of 5.
pub fn up_to_five(n: usize) -> usize {
    n.div_ceil(5) * 5
}

/// Minutes to read a page of size `s`.
pub fn reading_minutes(s: Size) -> usize {
    up_to_five(
        (s.words as f64 / WORDS_PER_MINUTE as f64
            + s.lines as f64 / LINES_PER_MINUTE as f64)
            .ceil() as usize,
    )
}

/// Minutes for an exercise of `stars` whose answer has `lines` lines of code.
pub fn exercise_minutes(stars: usize, lines: usize) -> usize {
    up_to_five(BASE_MINUTES[stars.clamp(1, 3) - 1] + MINUTES_PER_LINE * lines)
}

/// The size of page `page`, resolving its includes: an included page counts as
/// prose, anything else (a listing, an output) as shown lines.
pub fn page_size(page: &Path) -> Size {
    let text = fs::read_to_string(page).unwrap_or_default();
    let dir = page.parent().unwrap_or(Path::new("."));
    let mut size = Size::default();
    let mut in_code = false;
    for line in text.lines() {
        let found = directives(line);
        if !found.is_empty() {
            for (_, _, arg) in found {
                let (rel, anchor) = split_include_arg(arg);
                let target = dir.join(rel);
                if target.extension().is_some_and(|e| e == "md") {
                    let inner = page_size(&target);
                    size.words += inner.words;
                    size.lines += inner.lines;
                    continue;
                }
                let body = fs::read_to_string(&target).unwrap_or_default();
                size.lines += match anchor {
                    Some(a) => {
                        anchors::regions(&body).get(a).map_or(0, |r| r.len())
                    }
                    None => body.lines().count(),
                };
            }
            continue;
        }
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            size.lines += 1;
        } else {
            size.words += line.split_whitespace().count();
        }
    }
    size
}

/// The chapter page `book/src/NN_*.md` of chapter `nn`.
fn chapter_page(root: &Path, nn: &str) -> Option<PathBuf> {
    let src = root.join("book/src");
    let mut pages: Vec<PathBuf> = fs::read_dir(&src)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(&format!("{nn}_")) && n.ends_with(".md")
            })
        })
        .collect();
    pages.sort();
    pages.into_iter().next()
}

/// Lines of code (not blank, not a comment) of every region of `exercise`, read
/// from `dir`; None when the regions there are blank (a student edition).
fn answer_lines(dir: &Path, regions: &[String]) -> Result<Option<usize>> {
    let mut total = 0;
    for file in fs::read_dir(dir)? {
        let file = file?.path();
        if file.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = fs::read_to_string(&file)?;
        let parsed = anchors::exercises(&text, &file.display().to_string())
            .map_err(anyhow::Error::msg)?;
        for r in parsed
            .exercises
            .iter()
            .filter(|r| regions.contains(&r.name))
        {
            let code: Vec<&String> = r
                .body
                .iter()
                .filter(|l| !l.trim().is_empty() && !l.trim().starts_with("//"))
                .collect();
            if code.len() == 1 && code[0].contains("todo!(\"exercise") {
                return Ok(None);
            }
            total += code.len();
        }
    }
    Ok(Some(total))
}

/// The plan as text, at most 85 columns wide.
pub fn plan(root: &Path) -> Result<String> {
    let exercises = catalog(root)?;
    let answers = if root.join(SOLUTIONS).is_dir() {
        root.join(SOLUTIONS)
    } else {
        root.join(EXERCISE_SRC)
    };
    let mut out = format!(
        "Reading: {WORDS_PER_MINUTE} words of prose and {LINES_PER_MINUTE} lines of code or \
         output a minute.\nAn exercise: {} / {} / {} minutes for ★ / ★★ / ★★★, plus \
         {MINUTES_PER_LINE} for each line\nof its reference answer. Rounded up to 5 minutes. \
         Estimates, not measurements.\n\n",
        BASE_MINUTES[0], BASE_MINUTES[1], BASE_MINUTES[2]
    );
    out += "ch  page                   words  lines  read  exercises  1/2/3 stars  work\n";
    let mut rows = vec![];
    let (mut read_total, mut work_total) = (0, 0);
    let mut chapters: Vec<String> =
        exercises.iter().map(|e| e.chapter().to_string()).collect();
    chapters.dedup();
    for nn in &chapters {
        let page = chapter_page(root, nn)
            .with_context(|| format!("no book/src/{nn}_*.md"))?;
        let size = page_size(&page);
        let read = reading_minutes(size);
        let mine: Vec<_> =
            exercises.iter().filter(|e| e.chapter() == nn).collect();
        let mut stars = [0; 3];
        let mut work = 0;
        for e in &mine {
            stars[e.stars - 1] += 1;
            let lines = answer_lines(&answers, &e.regions)?;
            let minutes = lines.map(|l| exercise_minutes(e.stars, l));
            work += minutes.unwrap_or(0);
            rows.push((e.id.clone(), e.star_text(), lines, minutes));
        }
        read_total += read;
        work_total += work;
        let name = page.file_name().and_then(|n| n.to_str()).unwrap_or("");
        out += &format!(
            "{nn}  {name:<21} {:>6} {:>6} {read:>5} {:>10}  {:<11} {work:>5}\n",
            size.words,
            size.lines,
            mine.len(),
            format!("{}/{}/{}", stars[0], stars[1], stars[2]),
        );
    }
    out += &format!(
        "all chapters {:>33} {:>10} {:>18}\n\n",
        read_total,
        exercises.len(),
        work_total
    );
    out += "exercise                     stars  answer lines  minutes\n";
    for (id, stars, lines, minutes) in rows {
        let show =
            |v: Option<usize>| v.map_or("-".to_string(), |v| v.to_string());
        out += &format!(
            "{id:<28} {stars:<5} {:>13} {:>8}\n",
            show(lines),
            show(minutes)
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_of_thumb() {
        assert_eq!(up_to_five(0), 0);
        assert_eq!(up_to_five(11), 15);
        assert_eq!(exercise_minutes(1, 10), 30);
        assert_eq!(exercise_minutes(3, 6), 75);
        assert_eq!(
            reading_minutes(Size {
                words: 1500,
                lines: 120
            }),
            20
        );
    }
}
