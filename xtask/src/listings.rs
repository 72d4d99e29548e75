//! Listings as the reader sees them: flush left, with every brace matched.
//!
//! mdBook's `{{#include FILE:anchor}}` keeps the region's indentation, so a listing cut
//! from inside a function or an `impl` is shown with every line pushed right. Two pieces
//! here put that right and keep it right:
//!
//! * [`preprocess`], run by mdBook as the `flush-left` preprocessor (book/book.toml,
//!   after `links` has expanded the includes): it removes the common leading
//!   indentation of every fenced code block ([`flush_left`]);
//! * [`check_html`], run on the built book (`cargo xtask check-listings`, and the test
//!   xtask/tests/listings.rs, which builds the book): it reports every rendered listing
//!   that still has a common leading indentation, and every Rust or C++ listing with a
//!   brace that closes nothing or is never closed ([`unmatched_brace`]).
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::book::Problem;

// ---------------------------------------------------------------------------------------
// The preprocessor

/// mdBook's preprocessor protocol: `input` is the JSON array `[context, book]` mdBook
/// writes to the preprocessor's stdin; the answer is the book, every chapter's text
/// passed through [`flush_left`].
pub fn preprocess(input: &str) -> Result<String> {
    let value: serde_json::Value =
        serde_json::from_str(input).context("mdBook's input is not JSON")?;
    let serde_json::Value::Array(mut pair) = value else {
        bail!("mdBook's input is not the array [context, book]");
    };
    if pair.len() != 2 {
        bail!(
            "mdBook's input has {} elements, not [context, book]",
            pair.len()
        );
    }
    let mut book = pair.pop().expect("two elements");
    flush_chapters(&mut book);
    Ok(serde_json::to_string(&book)?)
}

/// Every chapter's `content`, wherever it sits in the book's tree. Walking the whole
/// value, not one version's field names, keeps this working across mdBook releases
/// that rename the list of items.
fn flush_chapters(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            let is_chapter = map.contains_key("sub_items");
            for (key, v) in map.iter_mut() {
                match v {
                    serde_json::Value::String(text)
                        if is_chapter && key == "content" =>
                    {
                        *text = flush_left(text);
                    }
                    _ => flush_chapters(v),
                }
            }
        }
        serde_json::Value::Array(items) => {
            items.iter_mut().for_each(flush_chapters)
        }
        _ => {}
    }
}

/// `markdown` with the common leading indentation of each fenced code block removed,
/// and the `#[counted]` lines of the lesson's functions (the exercises' counters).
///
/// A fence may itself be indented (inside a list item); CommonMark then strips up to the
/// fence's indentation from each line of the block, so only what lies beyond it is the
/// listing's own indentation, and only that is removed: no line moves left of the fence.
/// Blank lines do not count; tabs are left alone (the course's code has none).
pub fn flush_left(markdown: &str) -> String {
    let lines: Vec<&str> = markdown.split_inclusive('\n').collect();
    let mut out = String::with_capacity(markdown.len());
    let mut i = 0;
    while i < lines.len() {
        out.push_str(lines[i]);
        let Some(fence) = Fence::opening(lines[i]) else {
            i += 1;
            continue;
        };
        let body_start = i + 1;
        let mut body_end = body_start;
        while body_end < lines.len() && !fence.closes(lines[body_end]) {
            body_end += 1;
        }
        // `#[counted]` feeds the exercises' counters (counted/); it is not the
        // idea a listing shows.
        let body: Vec<&str> = lines[body_start..body_end]
            .iter()
            .copied()
            .filter(|l| !l.trim_start().starts_with("#[counted::counted"))
            .collect();
        let shift = body
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| spaces(l) - spaces(l).min(fence.indent))
            .min()
            .unwrap_or(0);
        for line in &body {
            if line.trim().is_empty() {
                out.push_str(line);
            } else {
                out.push_str(&line[shift..]);
            }
        }
        // The closing fence, if the block has one, is copied as it is.
        i = body_end;
        if i < lines.len() {
            out.push_str(lines[i]);
            i += 1;
        }
    }
    out
}

/// An opening code fence: its character, length and indentation.
struct Fence {
    mark: char,
    len: usize,
    indent: usize,
}

impl Fence {
    fn opening(line: &str) -> Option<Fence> {
        let indent = spaces(line);
        let rest = &line[indent..];
        let mark = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
        let len = rest.chars().take_while(|c| *c == mark).count();
        // A backtick fence's info string may not hold a backtick.
        let info = &rest[len..];
        (len >= 3 && !(mark == '`' && info.contains('`'))).then_some(Fence {
            mark,
            len,
            indent,
        })
    }

    fn closes(&self, line: &str) -> bool {
        let rest = line.trim_start_matches(' ');
        let len = rest.chars().take_while(|c| *c == self.mark).count();
        len >= self.len && rest[len..].trim().is_empty()
    }
}

/// How many spaces `line` starts with.
fn spaces(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

// ---------------------------------------------------------------------------------------
// Braces

/// Where a brace in `code` goes unmatched: `Some((line, message))`, 1-based within the
/// code, for the first `}` that closes nothing or else the first `{` never closed.
/// Braces in comments, strings and character literals do not count.
pub fn unmatched_brace(code: &str) -> Option<(usize, String)> {
    let chars: Vec<char> = code.chars().collect();
    let mut open: Vec<usize> = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\n' => line += 1,
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if next == Some('*') => {
                i += 2;
                while i < chars.len()
                    && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/'))
                {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
                i += 2;
                continue;
            }
            'r' if raw_string_start(&chars, i).is_some() => {
                let hashes = raw_string_start(&chars, i).expect("checked");
                i += 2 + hashes; // r, the hashes, the quote
                while i < chars.len() {
                    if chars[i] == '"'
                        && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'))
                    {
                        i += 1 + hashes;
                        break;
                    }
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
                continue;
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    line += usize::from(chars[i] == '\n');
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
            }
            // '{' and '\u{7b}' are characters; 'a without a closing quote is a lifetime.
            '\'' => {
                if next == Some('\\') {
                    if let Some(end) = (i + 2..chars.len().min(i + 12))
                        .find(|&k| chars[k] == '\'')
                    {
                        i = end;
                    }
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 2;
                }
            }
            '{' => open.push(line),
            '}' if open.pop().is_none() => {
                return Some((
                    line,
                    "a `}` that closes nothing the listing opened".into(),
                ));
            }
            _ => {}
        }
        i += 1;
    }
    open.first()
        .map(|&l| (l, "a `{` that the listing never closes".to_string()))
}

/// The number of `#` of a raw string `r#"` starting at `i`, if one starts there (and is
/// not the end of an identifier such as `for"`).
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
    (chars.get(i + 1 + hashes) == Some(&'"')).then_some(hashes)
}

// ---------------------------------------------------------------------------------------
// The rendered book

/// One `<pre><code>` block of an HTML page: the line of the page it starts on, its
/// language (from `class="language-x"`, empty if none), and its text as the reader
/// sees it (tags removed, entities decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub line: usize,
    pub language: String,
    pub code: String,
}

/// The code blocks of an HTML page, in order.
pub fn listings(html: &str) -> Vec<Listing> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(p) = html[from..].find("<pre") {
        let pre = from + p;
        from = pre + 4;
        let Some(pre_end) = html[pre..].find('>').map(|k| pre + k + 1) else {
            break;
        };
        // Only a <code> that opens the <pre> is a listing (mermaid's <pre> has none).
        if !html[pre_end..].starts_with("<code") {
            continue;
        }
        let Some(open_end) = html[pre_end..].find('>').map(|k| pre_end + k + 1)
        else {
            break;
        };
        let Some(close) =
            html[open_end..].find("</code>").map(|k| open_end + k)
        else {
            break;
        };
        let tag = &html[pre_end..open_end];
        let language = tag
            .split(|c: char| c == '"' || c.is_whitespace())
            .find_map(|w| w.strip_prefix("language-"))
            .unwrap_or("")
            .to_string();
        found.push(Listing {
            line: html[..pre].matches('\n').count() + 1,
            language,
            code: decode(&strip_tags(&drop_hidden(&html[open_end..close]))),
        });
        from = close;
    }
    found
}

/// Without the lines mdBook hides (`<span class="boring">`): the `fn main() {`
/// wrapper it adds around a playground listing, and `# ` lines. The reader sees
/// them only on asking.
fn drop_hidden(html: &str) -> String {
    const OPEN: &str = "<span class=\"boring\">";
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(i) = rest.find(OPEN) {
        out.push_str(&rest[..i]);
        rest = &rest[i + OPEN.len()..];
        rest = rest
            .find("</span>")
            .map_or("", |e| &rest[e + "</span>".len()..]);
    }
    out.push_str(rest);
    out
}

fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

fn decode(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

/// The languages whose listings must have their braces matched.
const BRACED: [&str; 4] = ["rust", "cpp", "c", "c++"];

/// What is wrong with one rendered listing: its common leading indentation, and for
/// Rust and C++ an unmatched brace. (line within the listing, message)
pub fn listing_problems(listing: &Listing) -> Vec<(usize, String)> {
    let mut problems = Vec::new();
    let indent = listing
        .code
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    if indent > 0 {
        let first = listing.code.lines().find(|l| !l.trim().is_empty());
        problems.push((
            1,
            format!(
                "every line of this listing is indented by at least {indent} \
                 (is the flush-left preprocessor in book.toml?): {:?}",
                first.unwrap_or("").trim()
            ),
        ));
    }
    if BRACED.contains(&listing.language.as_str()) {
        if let Some((line, message)) = unmatched_brace(&listing.code) {
            let text = listing.code.lines().nth(line - 1).unwrap_or("");
            problems.push((
                line,
                format!(
                    "{message}: line {line} of the listing, {:?}",
                    text.trim()
                ),
            ));
        }
    }
    problems
}

/// Every problem of every listing in the built book under `html_dir` (mdBook's
/// build-dir). print.html repeats every page, index.html the first: both skipped.
pub fn check_html(html_dir: &Path) -> Vec<Problem> {
    let mut problems = Vec::new();
    for page in html_pages(html_dir) {
        if page
            .file_name()
            .is_some_and(|n| n == "print.html" || n == "index.html")
        {
            continue;
        }
        let Ok(html) = fs::read_to_string(&page) else {
            continue;
        };
        let shown = page.strip_prefix(html_dir).unwrap_or(&page).to_path_buf();
        for listing in listings(&html) {
            for (_, message) in listing_problems(&listing) {
                problems.push(Problem {
                    file: shown.clone(),
                    line: listing.line,
                    message,
                });
            }
        }
    }
    problems
}

fn html_pages(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
