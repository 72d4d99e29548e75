//! `cargo xtask plan`: planning figures for a teacher, counted from the book and the
//! exercises, with the rule of thumb that turns them into minutes printed above them.
//!
//! Per chapter: the words of prose on its page (the exercise page it includes
//! counted in, code blocks and program output left out), the lines of code and output
//! it shows (every include resolved), and an estimate of the time to read it. Per
//! exercise: its stars, the lines of its reference answer (code lines, no comments
//! or blank lines) and an estimate of the time to do it. These are estimates from a
//! stated rule, not measurements of students: the rule is printed with them.
//!
//! The prose repeats some of these figures (35 exercises, two to four a chapter, the
//! total minutes); [`check_plan_prose`], part of `cargo xtask check-book`, holds them
//! to the exercises and to the plan the book shows, so that they cannot drift apart,
//! and holds the plan the book shows to a fresh count of the book and the exercises.
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
                let n = body.lines().count();
                size.lines +=
                    match (anchor, crate::book::include_line_range(arg)) {
                        (Some(a), _) => anchors::regions(&body)
                            .get(a)
                            .map_or(0, |r| r.len()),
                        // `x.txt:51:91` shows those lines only, not the whole file.
                        (None, Some((start, end))) => {
                            let end = end.unwrap_or(n).min(n);
                            (end + 1).saturating_sub(start.max(1))
                        }
                        (None, None) => n,
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

/// Where the reference answers are: the copy a student edition keeps, else the
/// exercises themselves.
fn answers_dir(root: &Path) -> PathBuf {
    if root.join(SOLUTIONS).is_dir() {
        root.join(SOLUTIONS)
    } else {
        root.join(EXERCISE_SRC)
    }
}

/// Whether some exercise's reference answer is blank here (an edition without
/// answers), so that a fresh plan cannot count its minutes.
fn answers_blank(root: &Path) -> Result<bool> {
    let answers = answers_dir(root);
    for e in catalog(root)? {
        if answer_lines(&answers, &e.regions)?.is_none() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The plan as text, at most 85 columns wide.
pub fn plan(root: &Path) -> Result<String> {
    let exercises = catalog(root)?;
    let answers = answers_dir(root);
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

/// The pages whose prose states figures of the plan: how many exercises, how many a
/// chapter ends with, how many solution regions, the plan's total minutes.
pub const PROSE_PAGES: &[&str] = &[
    "README.md",
    "book/src/introduction.md",
    "book/src/how_to_use.md",
    "book/src/instructors.md",
    "book/src/answer_key.md",
];

/// The book's copy of the plan, which the page for instructors shows.
pub const PLAN_OUTPUT: &str = "book/src/outputs/course_plan.txt";

/// What the prose may state, counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// Exercises in all.
    pub exercises: usize,
    /// The fewest and the most exercises of a chapter.
    pub per_chapter: (usize, usize),
    /// Solution regions in all, and the exercises with more than one.
    pub regions: usize,
    pub multi_region: usize,
    /// The plan's total reading and work minutes, as the book's copy of it says.
    pub minutes: Option<(usize, usize)>,
}

/// The facts of the workspace at `root`: the counts from its exercises, the minutes
/// from the plan the book shows.
pub fn facts(root: &Path) -> Result<Facts> {
    let exercises = catalog(root)?;
    let mut per: Vec<usize> = vec![];
    let mut last = "";
    for e in &exercises {
        if e.chapter() == last {
            *per.last_mut().expect("a chapter was started") += 1;
        } else {
            per.push(1);
            last = e.chapter();
        }
    }
    let plan = fs::read_to_string(root.join(PLAN_OUTPUT)).unwrap_or_default();
    Ok(Facts {
        exercises: exercises.len(),
        per_chapter: (
            per.iter().copied().min().unwrap_or(0),
            per.iter().copied().max().unwrap_or(0),
        ),
        regions: exercises.iter().map(|e| e.regions.len()).sum(),
        multi_region: exercises.iter().filter(|e| e.regions.len() > 1).count(),
        minutes: plan_totals(&plan),
    })
}

/// (read, work) from the plan's `all chapters` line.
pub fn plan_totals(plan: &str) -> Option<(usize, usize)> {
    let line = plan.lines().find(|l| l.starts_with("all chapters"))?;
    let n: Vec<usize> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    match n[..] {
        [read, _exercises, work] => Some((read, work)),
        _ => None,
    }
}

/// `35`, `1,765`, `three`: a count as prose writes it.
fn count(word: &str) -> Option<usize> {
    const WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
        "ten", "eleven", "twelve",
    ];
    let w = word
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    if let Some(i) = WORDS.iter().position(|&n| n == w) {
        return Some(i + 1);
    }
    let digits = w.replace(',', "");
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// (line, message) for each figure of `text` that is not the plan's: "N exercises",
/// "ends with N or M exercises", "N solution regions", "N of them have more than one
/// solution region", "(R and W minutes)" and "about H hours in all".
pub fn prose_mismatches(text: &str, facts: &Facts) -> Vec<(usize, String)> {
    // Words with their line, so that a phrase may break across lines.
    let words: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .flat_map(|(i, l)| l.split_whitespace().map(move |w| (i + 1, w)))
        .collect();
    let is = |k: usize, w: &str| {
        words.get(k).is_some_and(|(_, x)| {
            x.trim_matches(|c: char| !c.is_alphanumeric())
                .eq_ignore_ascii_case(w)
        })
    };
    let num = |k: usize| words.get(k).and_then(|(_, w)| count(w));
    let mut found = vec![];
    let mut differs = |k: usize, what: &str, said: usize, is: usize| {
        if said != is {
            found.push((
                words[k].0,
                format!("says {said} {what}, the course plan has {is}"),
            ));
        }
    };
    for (k, &(_, word)) in words.iter().enumerate() {
        let digits = word.trim_start_matches('(');
        let written_in_digits = digits
            .starts_with(|c: char| c.is_ascii_digit())
            && digits.chars().all(|c| c.is_ascii_digit() || c == ',');
        if written_in_digits && is(k + 1, "exercises") {
            differs(k, "exercises", num(k).unwrap_or(0), facts.exercises);
        }
        if is(k, "ends")
            && is(k + 1, "with")
            && (is(k + 3, "or") || is(k + 3, "to"))
        {
            if let (Some(a), Some(b), true) =
                (num(k + 2), num(k + 4), is(k + 5, "exercises"))
            {
                differs(
                    k,
                    "as the fewest exercises of a chapter",
                    a,
                    facts.per_chapter.0,
                );
                differs(
                    k,
                    "as the most exercises of a chapter",
                    b,
                    facts.per_chapter.1,
                );
            }
        }
        if is(k + 1, "solution") && is(k + 2, "regions") {
            if let Some(n) = num(k) {
                differs(k, "solution regions", n, facts.regions);
            }
        }
        let phrase = ["of", "them", "have", "more", "than", "one", "solution"];
        if phrase.iter().enumerate().all(|(i, w)| is(k + 1 + i, w)) {
            if let Some(n) = num(k) {
                differs(
                    k,
                    "exercises with more than one region",
                    n,
                    facts.multi_region,
                );
            }
        }
        if let Some((read, work)) = facts.minutes {
            if word.starts_with('(') && is(k + 1, "and") && is(k + 3, "minutes")
            {
                if let (Some(r), Some(w)) = (num(k), num(k + 2)) {
                    differs(k, "minutes of reading", r, read);
                    differs(k, "minutes of exercises", w, work);
                }
            }
            if is(k, "about")
                && is(k + 2, "hours")
                && is(k + 3, "in")
                && is(k + 4, "all")
            {
                if let Some(h) = num(k + 1) {
                    let hours = ((read + work) as f64 / 60.0).round() as usize;
                    differs(k, "hours in all", h, hours);
                }
            }
        }
    }
    found
}

/// The command that rewrites [`PLAN_OUTPUT`] from the book and the exercises as they
/// are; the messages of [`check_plan_prose`] name it.
pub const REGEN_PLAN: &str =
    "scripts/regen-outputs.sh --no-build --only course_plan";

/// Whether the workspace at `root` is a course whose prose states the plan: it has
/// exercises, the book's copy of the plan or the page for instructors. The check's
/// fixtures have none of them; a course that has lost one of its inputs has the others.
pub fn is_course(root: &Path) -> bool {
    [EXERCISE_SRC, PLAN_OUTPUT, "book/src/instructors.md"]
        .iter()
        .any(|p| root.join(p).exists())
}

/// Part of `cargo xtask check-book`: the figures of [`PROSE_PAGES`] against the
/// exercises and the plan the book shows, and that plan against a fresh count
/// ([`plan_is_current`]), as (file, line, message). Nothing for a workspace that is no
/// course ([`is_course`]); in a course, an input that cannot be read is a problem, not
/// a figure left unchecked. An edition without answers (`student-edition
/// --no-answers`) keeps the plan counted from the answers before they were taken
/// out, which it cannot count again: there the plan is not compared.
pub fn check_plan_prose(root: &Path) -> Vec<(PathBuf, usize, String)> {
    if !is_course(root) {
        return vec![];
    }
    let plan_path = root.join(PLAN_OUTPUT);
    let facts = match facts(root) {
        Ok(f) if f.exercises > 0 => f,
        Ok(_) => {
            let dir = root.join(EXERCISE_SRC);
            return vec![(dir, 0, "no exercises found: the figures of the prose cannot be checked".into())];
        }
        Err(e) => {
            let dir = root.join(EXERCISE_SRC);
            return vec![(dir, 0, format!("cannot count the exercises ({e:#}): the figures of the prose cannot be checked"))];
        }
    };
    let mut found = vec![];
    if facts.minutes.is_none() {
        found.push((
            plan_path.clone(),
            0,
            format!(
                "missing, or without its `all chapters` line: the minutes of the prose \
                 cannot be checked; write it with {REGEN_PLAN}"
            ),
        ));
    } else {
        let shown = fs::read_to_string(&plan_path).unwrap_or_default();
        match answers_blank(root)
            .and_then(|blank| Ok(if blank { None } else { Some(plan(root)?) }))
        {
            Ok(None) => {}
            Ok(Some(fresh)) => {
                if let Some((line, message)) = plan_is_current(&shown, &fresh) {
                    found.push((plan_path.clone(), line, message));
                }
            }
            Err(e) => found.push((
                plan_path.clone(),
                0,
                format!("cannot count a fresh plan to compare it with ({e:#})"),
            )),
        }
    }
    for page in PROSE_PAGES {
        let path = root.join(page);
        let Ok(text) = fs::read_to_string(&path) else {
            found.push((
                path,
                0,
                "cannot be read: its figures of the plan are not checked"
                    .into(),
            ));
            continue;
        };
        for (line, message) in prose_mismatches(&text, &facts) {
            found.push((path.clone(), line, message));
        }
    }
    found
}

/// None when `shown`, the book's copy of the plan, holds `fresh`, the plan counted now,
/// after its header (the command and device lines, then a blank line) and apart from
/// trailing blanks; else the first line of `shown` that differs, and a message naming
/// [`REGEN_PLAN`].
pub fn plan_is_current(shown: &str, fresh: &str) -> Option<(usize, String)> {
    let skip = crate::book::output_header(shown).map_or(0, |h| h.lines);
    let mut body: Vec<(usize, &str)> = shown
        .lines()
        .enumerate()
        .skip(skip)
        .map(|(i, l)| (i + 1, l.trim_end()))
        .collect();
    if body.first().is_some_and(|(_, l)| l.is_empty()) {
        body.remove(0);
    }
    while body.last().is_some_and(|(_, l)| l.is_empty()) {
        body.pop();
    }
    let mut fresh: Vec<&str> = fresh.lines().map(str::trim_end).collect();
    while fresh.last().is_some_and(|l| l.is_empty()) {
        fresh.pop();
    }
    let end = body.last().map_or(skip + 1, |(i, _)| i + 1);
    let at = (0..body.len().max(fresh.len()))
        .find(|&k| body.get(k).map(|(_, l)| *l) != fresh.get(k).copied())?;
    let line = body.get(at).map_or(end, |(i, _)| *i);
    let now = fresh
        .get(at)
        .map_or("(nothing)".to_string(), |l| format!("`{l}`"));
    Some((
        line,
        format!(
            "the course plan is older than the book and exercises (a fresh \
             `cargo xtask plan` has {now} here); rewrite it with {REGEN_PLAN}"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FACTS: Facts = Facts {
        exercises: 35,
        per_chapter: (2, 4),
        regions: 41,
        multi_region: 4,
        minutes: Some((690, 1765)),
    };

    #[test]
    fn figures_that_agree_with_the_plan_pass() {
        let text = "Each chapter ends with two to four exercises; 35 exercises in all.\n\
                    The course has 35 exercises. Four of them have more than one solution\n\
                    region. That makes 41 solution regions. About 41 hours in all (690\n\
                    and 1,765 minutes), all 35 exercises.";
        assert_eq!(prose_mismatches(text, &FACTS), []);
    }

    #[test]
    fn figures_that_drifted_are_reported_with_their_line() {
        let text = "Every chapter ends with two or three exercises.\n\
                    In all, 34 exercises. Three of them have more than one solution region,\n\
                    40 solution regions; about 40 hours in all (690 and\n\
                    1,760 minutes).";
        let found = prose_mismatches(text, &FACTS);
        let shown: Vec<String> =
            found.iter().map(|(l, m)| format!("{l}: {m}")).collect();
        assert_eq!(
            shown,
            [
                "1: says 3 as the most exercises of a chapter, the course plan has 4",
                "2: says 34 exercises, the course plan has 35",
                "2: says 3 exercises with more than one region, the course plan has 4",
                "3: says 40 solution regions, the course plan has 41",
                "3: says 40 hours in all, the course plan has 41",
                "3: says 1760 minutes of exercises, the course plan has 1765",
            ]
        );
    }

    #[test]
    fn an_include_of_a_line_range_counts_those_lines_only() {
        let dir = std::env::temp_dir()
            .join(format!("plan-range-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let body: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        fs::write(dir.join("out.txt"), body).unwrap();
        let page = dir.join("page.md");
        let with = |arg: &str| {
            fs::write(&page, format!("{{{{#include {arg}}}}}\n")).unwrap();
            page_size(&page).lines
        };
        assert_eq!(with("out.txt"), 100);
        assert_eq!(with("out.txt:51:91"), 41);
        assert_eq!(with("out.txt:95:"), 6);
        assert_eq!(with("out.txt::9"), 9);
        assert_eq!(with("out.txt:7"), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_totals_are_read_from_the_plan() {
        let plan = "ch  page  words\n01  01_embedding.md  3554  203  45  3  1/2/0  140\n\
                    all chapters                               690         35               1765\n";
        assert_eq!(plan_totals(plan), Some((690, 1765)));
        assert_eq!(plan_totals("no plan"), None);
    }

    /// The course's own pages against its own exercises and plan.
    #[test]
    fn the_course_states_the_plan_s_figures() {
        let root = crate::workspace_root();
        let found = check_plan_prose(&root);
        assert!(
            facts(&root).is_ok_and(|f| f.exercises > 0 && f.minutes.is_some())
        );
        assert_eq!(found, [], "prose that disagrees with the course plan");
    }

    #[test]
    fn a_plan_that_matches_a_fresh_count_passes_whatever_its_header() {
        let fresh = "Reading: 150 words\n\nch  page\n01  01_x.md  3693\n";
        let shown = format!(
            "$ scripts/course-plan.sh\n# device: cpu (AMD EPYC, 2 threads) · libtorch 2.11.0\n\
             #   · scripts/regen-outputs.sh\n\n{fresh}\n"
        );
        assert_eq!(plan_is_current(&shown, fresh), None);
    }

    #[test]
    fn a_plan_older_than_the_book_is_reported_with_the_regen_command() {
        let shown =
            "$ scripts/course-plan.sh\n# device: cpu · 2026-12-03 UTC\n\n\
                     Reading: 150 words\n01  01_x.md  3693\n02  02_y.md  10\n";
        let (line, message) = plan_is_current(
            shown,
            "Reading: 150 words\n01  01_x.md  3703\n02  02_y.md  10\n",
        )
        .expect("a changed count");
        assert_eq!(line, 5);
        assert!(message.contains("`01  01_x.md  3703`"), "{message}");
        assert!(
            message.contains(
                "scripts/regen-outputs.sh --no-build --only course_plan"
            ),
            "{message}"
        );
        // A chapter more, or one fewer, in the fresh count.
        let longer = "Reading: 150 words\n01  01_x.md  3693\n02  02_y.md  10\n03  03_z.md  7\n";
        assert_eq!(plan_is_current(shown, longer).map(|f| f.0), Some(7));
        let shorter = "Reading: 150 words\n01  01_x.md  3693\n";
        let (line, message) =
            plan_is_current(shown, shorter).expect("a line too many");
        assert_eq!(line, 6);
        assert!(message.contains("(nothing)"), "{message}");
    }

    #[test]
    fn a_course_whose_inputs_are_missing_is_a_problem_not_a_pass() {
        let dir = std::env::temp_dir()
            .join(format!("plan-missing-{}", std::process::id()));
        fs::create_dir_all(dir.join("book/src")).unwrap();
        // No exercises, no plan, no prose pages: not a course, nothing to check.
        assert_eq!(check_plan_prose(&dir), []);
        // The page for instructors alone: the exercises cannot be counted.
        fs::write(dir.join("book/src/instructors.md"), "35 exercises.\n")
            .unwrap();
        let found = check_plan_prose(&dir);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].2.contains("cannot count the exercises"),
            "{found:?}"
        );
        // Exercises that count, but no plan and no other prose page.
        fs::create_dir_all(dir.join(EXERCISE_SRC)).unwrap();
        fs::write(dir.join(EXERCISE_SRC).join("ch01.rs"), "// none\n").unwrap();
        let found = check_plan_prose(&dir);
        assert!(found[0].2.starts_with("no exercises found"), "{found:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

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
