//! Part of `cargo xtask check-book`: the glossary's terms on the pages a reader meets
//! before any chapter has defined them.
//!
//! The page for instructors names ideas of every chapter (beams, a KV cache, an
//! ablation) for a teacher who has not read the chapters, and says that each term it
//! uses is linked to its definition; the page on how to use the course, read after the
//! introduction, names terms of later chapters too. This check keeps them readable for
//! every term of the glossary's machine-learning table: on each page of [`PAGES`], the
//! *first* mention of such a term, unless a page read before it defines the term, must
//! be
//!
//! * the text of a link to the term's glossary entry (`glossary.md#kv-cache`) or to a
//!   page the glossary says defines it (`10_greedy_decode.md#term-kv-cache`), or
//! * defined in place: preceded by a `<a id="term-…"></a>` anchor, the book's mark of a
//!   definition, whose id is the term's: `term-` and its words joined by hyphens
//!   (`term-kv-cache`), `term-` and its glossary anchor, or the anchor the glossary's
//!   "defined in" column links to. Another term's anchor defines that term, not this.
//!
//! A later mention may stand alone: the reader has been told once. Mentions in code,
//! in math, in headings and in a link's target do not count. The terms of the
//! glossary's table of `tch` notation are Rust names, shown in code; its plain words
//! (shape, view, apply) are everyday words on these pages and are not checked.
//! [`EVERYDAY`] lists the few machine-learning terms that the pages also use in their
//! plain sense, where a word cannot tell the two apart.
//!
//! A mention may be in the plural: `heads`, `batches`, `probabilities` for
//! "probability".
//!
//! It also checks that every term of the glossary has an anchor
//! (`<a id="kv-cache"></a>KV cache`) for these links to point at, and that every link
//! of the book to `glossary.md#…` names one of them (mdBook does not), on every page
//! under book/src, the exercise pages that chapters include among them.
use std::fs;
use std::path::{Path, PathBuf};

/// The pages read before the chapters that this check covers, under book/src, each
/// with the pages whose definitions its reader has met: how_to_use.md comes after the
/// introduction; the page for instructors is read on its own.
pub const PAGES: &[(&str, &[&str])] = &[
    ("how_to_use.md", &["introduction.md"]),
    ("instructors.md", &[]),
];

/// Glossary terms the pages also use as plain words: the answer *key*, the set-up's
/// *steps*, a machine's *memory*, a library's *features*. Not checked.
pub const EVERYDAY: &[&str] = &["key", "step", "memory", "feature"];

/// One term of the glossary: a row may hold several (`encoder, decoder`).
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// The words of the term, lowercase: `["kv", "cache"]`.
    pub words: Vec<String>,
    /// As the glossary writes it, for messages.
    pub name: String,
    /// Its anchor in the glossary, if it has one.
    pub anchor: Option<String>,
    /// The pages the row's "defined in" column links to, without fragment.
    pub defined_in: Vec<String>,
    /// The fragments of those links (`term-kv-cache`): the anchors that define it.
    pub defined_at: Vec<String>,
    /// Whether it is in the machine-learning table (checked on the pages).
    pub checked: bool,
    /// Its line in glossary.md.
    pub line: usize,
}

/// Problems as (file, line, message); the file is under `book_src`.
pub type Found = Vec<(PathBuf, usize, String)>;

/// Runs the check on the book whose pages are in `book_src`; nothing when it has no
/// glossary.
pub fn check_glossary_terms(book_src: &Path) -> Found {
    let glossary = book_src.join("glossary.md");
    let Ok(text) = fs::read_to_string(&glossary) else {
        return vec![];
    };
    let terms = glossary_terms(&text);
    let mut found: Found = terms
        .iter()
        .filter(|t| t.anchor.is_none())
        .map(|t| {
            (
                glossary.clone(),
                t.line,
                format!(
                    "glossary term '{}' has no anchor (`<a id=\"…\"></a>` before it) \
                     for pages to link to",
                    t.name
                ),
            )
        })
        .collect();
    for (page, read_before) in PAGES {
        let path = book_src.join(page);
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        for (line, message) in check_page(&text, &terms, read_before) {
            found.push((path.clone(), line, message));
        }
    }
    found.extend(check_glossary_links(book_src, &terms));
    found
}

/// Every link of the book's pages to `glossary.md#x` whose `x` is no term's anchor: a
/// browser would open the glossary at its top, without a word.
fn check_glossary_links(book_src: &Path, terms: &[Term]) -> Found {
    let mut pages = markdown_under(book_src);
    pages.sort();
    let mut found = vec![];
    for path in pages {
        let text = fs::read_to_string(&path).unwrap_or_default();
        for link in links(&text) {
            let Some(anchor) = link.target.strip_prefix("glossary.md#") else {
                continue;
            };
            if !terms.iter().any(|t| t.anchor.as_deref() == Some(anchor)) {
                let line = text[..link.text.start].matches('\n').count() + 1;
                found.push((
                    path.clone(),
                    line,
                    format!(
                        "link to {}: the glossary has no term with that anchor",
                        link.target
                    ),
                ));
            }
        }
    }
    found
}

/// The .md files under `dir`, at any depth: the exercise pages in exercises/ are
/// included in the chapters, so their links are read from the chapter's folder.
fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = vec![];
    for path in fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
    {
        if path.is_dir() {
            found.extend(markdown_under(&path));
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
    found
}

/// The terms of glossary.md's tables, in order.
pub fn glossary_terms(glossary: &str) -> Vec<Term> {
    let mut terms = vec![];
    let mut checked = false;
    for (i, line) in glossary.lines().enumerate() {
        if let Some(title) = line.strip_prefix("## ") {
            checked = title.trim() == "Machine learning";
            continue;
        }
        let Some(row) = line.strip_prefix("| ") else {
            continue;
        };
        let cells: Vec<&str> = row.split(" | ").collect();
        if cells.len() < 3
            || cells[0].trim() == "term"
            || row.starts_with("---")
        {
            continue;
        }
        let targets = links(cells[cells.len() - 1]);
        let defined_in: Vec<String> = targets
            .iter()
            .map(|l| page_of(&l.target).to_string())
            .collect();
        let defined_at: Vec<String> = targets
            .iter()
            .filter_map(|l| {
                l.target.split_once('#').map(|(_, f)| f.to_string())
            })
            .collect();
        for piece in split_outside(cells[0]) {
            let piece = piece.trim();
            let (anchor, rest) = match piece
                .strip_prefix("<a id=\"")
                .and_then(|r| r.split_once("\"></a>"))
            {
                Some((id, rest)) => (Some(id.to_string()), rest),
                None => (None, piece),
            };
            let name = strip_asides(rest);
            let words: Vec<String> =
                name.split_whitespace().map(str::to_lowercase).collect();
            if words.is_empty() {
                continue;
            }
            terms.push(Term {
                words,
                name: name.split_whitespace().collect::<Vec<_>>().join(" "),
                anchor,
                defined_in: defined_in.clone(),
                defined_at: defined_at.clone(),
                checked,
                line: i + 1,
            });
        }
    }
    terms
}

/// (line, message) for each checked term whose first mention on `page` is neither
/// linked to its definition nor defined there, unless one of the pages `read_before`
/// defines it.
pub fn check_page(
    page: &str,
    terms: &[Term],
    read_before: &[&str],
) -> Vec<(usize, String)> {
    let plain = prose_only(page);
    let words = word_spans(&plain);
    let page_links = links(page);
    let mut problems = vec![];
    let checked: Vec<&Term> = terms.iter().filter(|t| t.checked).collect();
    let spans: Vec<Vec<(usize, usize)>> = checked
        .iter()
        .map(|t| mentions(&words, &plain, &t.words))
        .collect();
    for (k, term) in checked.iter().enumerate() {
        let known = term
            .defined_in
            .iter()
            .any(|p| read_before.contains(&p.as_str()));
        if known || EVERYDAY.contains(&term.name.as_str()) {
            continue;
        }
        // A mention inside a longer term's ("mask" in "causal mask") is that term's.
        let inside_another = |&(a, b): &(usize, usize)| {
            spans.iter().enumerate().any(|(j, other)| {
                j != k
                    && other
                        .iter()
                        .any(|&(c, d)| c <= a && b <= d && d - c > b - a)
            })
        };
        let Some(&(at, _)) = spans[k].iter().find(|m| !inside_another(m))
        else {
            continue;
        };
        let line = page[..at].matches('\n').count() + 1;
        let link = page_links.iter().find(|l| l.text.contains(&at));
        let verdict = match link {
            Some(l) if links_to_definition(&l.target, term) => continue,
            Some(l) => format!(
                "'{}' first appears in a link to {}, which does not define it",
                term.name, l.target
            ),
            None if defined_here(&page[..at], term) => continue,
            None => format!(
                "'{}' first appears here, neither linked nor defined",
                term.name
            ),
        };
        let glossary = term
            .anchor
            .as_ref()
            .map_or(String::new(), |a| format!("glossary.md#{a} or "));
        problems.push((
            line,
            format!(
                "{verdict}: link its first mention to {glossary}{}, or define it in \
                 place after a `<a id=\"term-…\"></a>`",
                term.defined_in.join(" or ")
            ),
        ));
    }
    problems
}

fn links_to_definition(target: &str, term: &Term) -> bool {
    let glossary_entry = term
        .anchor
        .as_ref()
        .is_some_and(|a| target == format!("glossary.md#{a}"));
    glossary_entry || term.defined_in.iter().any(|p| p == page_of(target))
}

/// Whether the text just before a mention of `term` ends with the anchor of its
/// definition, allowing the emphasis that usually follows it:
/// `<a id="term-kv-cache"></a>*KV cache*`. The anchor must be the term's (see the
/// module's account): `<a id="term-seed"></a>*KV cache*` defines a seed.
fn defined_here(before: &str, term: &Term) -> bool {
    let before = before.trim_end_matches(['*', '_']);
    let Some(open) = before.strip_suffix("\"></a>") else {
        return false;
    };
    let Some(i) = open.rfind("<a id=\"") else {
        return false;
    };
    let id = &open[i + "<a id=\"".len()..];
    let own = [
        Some(format!("term-{}", term.words.join("-"))),
        term.anchor.as_ref().map(|a| format!("term-{a}")),
    ];
    id.starts_with("term-")
        && !id.contains(['\n', '"'])
        && (own.iter().flatten().any(|o| o == id)
            || term.defined_at.iter().any(|d| d == id))
}

/// The page with everything that is not prose blanked out, byte for byte, so that
/// offsets stay those of the page: fenced code, headings, inline code, math, link
/// targets, HTML tags and mdBook's `{{#…}}` directives.
pub fn prose_only(page: &str) -> String {
    let mut out = page.as_bytes().to_vec();
    let mut in_code = false;
    let mut start = 0;
    for line in page.split_inclusive('\n') {
        let end = start + line.trim_end_matches('\n').len();
        let trimmed = line.trim_start();
        let fence = trimmed.starts_with("```");
        if fence || in_code || trimmed.starts_with('#') {
            blank(&mut out, start, end);
        } else {
            for (a, b) in spans(line, "`", "`")
                .into_iter()
                .chain(spans(line, "{{#", "}}"))
            {
                blank(&mut out, start + a, start + b);
            }
            // Math, tags and targets after code, whose `$` or `<` they are not.
            let rest = String::from_utf8_lossy(&out[start..end]).into_owned();
            for (a, b) in spans(&rest, "$", "$")
                .into_iter()
                .chain(spans(&rest, "](", ")"))
                .chain(tags(&rest))
            {
                blank(&mut out, start + a, start + b);
            }
        }
        if fence {
            in_code = !in_code;
        }
        start += line.len();
    }
    String::from_utf8(out).expect("only ASCII bytes were written")
}

fn blank(bytes: &mut [u8], from: usize, to: usize) {
    for b in &mut bytes[from..to] {
        *b = b' ';
    }
}

/// Byte ranges from each `open` to its `close`, both included, on one line.
fn spans(line: &str, open: &str, close: &str) -> Vec<(usize, usize)> {
    let mut found = vec![];
    let mut from = 0;
    while let Some(i) = line[from..].find(open) {
        let a = from + i;
        let Some(j) = line[a + open.len()..].find(close) else {
            break;
        };
        let b = a + open.len() + j + close.len();
        found.push((a, b));
        from = b;
    }
    found
}

/// HTML tags on one line: `<` then a letter or `/`, up to `>`.
fn tags(line: &str) -> Vec<(usize, usize)> {
    spans(line, "<", ">")
        .into_iter()
        .filter(|&(a, _)| {
            line[a + 1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '/')
        })
        .collect()
}

/// A link: the byte range of its text and its target.
#[derive(Debug)]
struct Link {
    text: std::ops::Range<usize>,
    target: String,
}

/// The inline links `[text](target)` of a text (images included: their alt text is
/// not a mention anyone reads as one, and they name no glossary term here).
fn links(text: &str) -> Vec<Link> {
    let mut found = vec![];
    let mut from = 0;
    while let Some(i) = text[from..].find("](") {
        let close = from + i;
        from = close + 2;
        let Some(open) = text[..close].rfind('[') else {
            continue;
        };
        if text[open..close].contains("\n\n") {
            continue;
        }
        let Some(end) = text[from..].find(')') else {
            break;
        };
        found.push(Link {
            text: open + 1..close,
            target: text[from..from + end].to_string(),
        });
    }
    found
}

fn page_of(target: &str) -> &str {
    target.split('#').next().unwrap_or(target)
}

/// Splits a glossary cell at commas outside math and parentheses.
fn split_outside(cell: &str) -> Vec<&str> {
    let (mut depth, mut math, mut from) = (0i32, false, 0);
    let mut pieces = vec![];
    for (i, c) in cell.char_indices() {
        match c {
            '$' => math = !math,
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 && !math => {
                pieces.push(&cell[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    pieces.push(&cell[from..]);
    pieces
}

/// A term without its math, parenthesised asides and code marks:
/// `normal distribution $\mathcal{N}(…)$` is "normal distribution".
fn strip_asides(name: &str) -> String {
    let mut out = String::new();
    let (mut depth, mut math) = (0i32, false);
    for c in name.chars() {
        match c {
            '$' => math = !math,
            '(' if !math => depth += 1,
            ')' if !math => depth -= 1,
            '`' => {}
            _ if depth == 0 && !math => out.push(c),
            _ => {}
        }
    }
    out
}

/// The words of a text, lowercase, with their byte offsets: runs of letters, digits
/// and inner hyphens (`feed-forward` is one word).
fn word_spans(text: &str) -> Vec<(usize, String)> {
    let mut words = vec![];
    let mut current: Option<(usize, String)> = None;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() || (c == '-' && current.is_some()) {
            current
                .get_or_insert_with(|| (i, String::new()))
                .1
                .extend(c.to_lowercase());
        } else if let Some((at, w)) = current.take() {
            words.push((at, w.trim_end_matches('-').to_string()));
        }
    }
    if let Some((at, w)) = current {
        words.push((at, w.trim_end_matches('-').to_string()));
    }
    words
}

/// The byte ranges where the page's words are the term's, the last one also in the
/// plural (`heads`, `batches`, `probabilities`), with only spaces or a line break
/// between them.
fn mentions(
    words: &[(usize, String)],
    text: &str,
    term: &[String],
) -> Vec<(usize, usize)> {
    let n = term.len();
    (0..words.len().saturating_sub(n - 1))
        .filter_map(|i| {
            let run = &words[i..i + n];
            let same =
                run.iter().zip(term).enumerate().all(|(k, ((_, w), t))| {
                    w == t
                        || (k == n - 1
                            && (w.strip_suffix('s') == Some(t)
                                || w.strip_suffix("es") == Some(t)
                                || w.strip_suffix("ies").is_some_and(|stem| {
                                    t.strip_suffix('y') == Some(stem)
                                })))
                });
            let together = run.windows(2).all(|p| {
                let gap = &text[p[0].0 + p[0].1.len()..p[1].0];
                gap.chars().all(char::is_whitespace)
            });
            let (last_at, last) = &run[n - 1];
            (same && together).then_some((run[0].0, last_at + last.len()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GLOSSARY: &str = "\
# Glossary

## Machine learning

| term | in short | defined in |
|---|---|---|
| <a id=\"kv-cache\"></a>KV cache | the keys and values kept | [chapter 10](10_greedy_decode.md#term-kv-cache) |
| <a id=\"encoder\"></a>encoder, <a id=\"decoder\"></a>decoder | the halves | [introduction](introduction.md#term-encoder) |
| <a id=\"normal\"></a>normal distribution $\\mathcal{N}(\\mu, \\sigma^2)$ | the bell | [chapter 01](01_embedding.md#term-normal) |
| query, <a id=\"key\"></a>key | what a position offers | [chapter 02](02_attention.md#q) |
| beam search | keeping the best | [chapter 10](10_greedy_decode.md#term-beam-search) |

## tch, anyhow and Python notation

| term | in short | defined in |
|---|---|---|
| <a id=\"view\"></a>view | a tensor that shares | [tch primer](tch_primer.md#term-view) |
";

    fn problems(page: &str) -> Vec<(usize, String)> {
        check_page(page, &glossary_terms(GLOSSARY), &[])
    }

    #[test]
    fn the_glossary_is_read_term_by_term() {
        let terms = glossary_terms(GLOSSARY);
        let names: Vec<&str> = terms.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "KV cache",
                "encoder",
                "decoder",
                "normal distribution",
                "query",
                "key",
                "beam search",
                "view"
            ]
        );
        assert_eq!(terms[0].words, ["kv", "cache"]);
        assert_eq!(terms[2].anchor.as_deref(), Some("decoder"));
        assert_eq!(terms[2].defined_in, ["introduction.md"]);
        assert!(terms[0].checked && !terms[7].checked);
        // "query" has no anchor of its own, nor has "beam search".
        assert_eq!(terms[4].anchor, None);
        assert_eq!(terms[6].anchor, None);
    }

    #[test]
    fn an_unlinked_first_mention_fails() {
        let found =
            problems("An intro.\n\nIt keeps a KV\ncache across calls.\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 3);
        assert!(
            found[0].1.contains("'KV cache' first appears here"),
            "{found:?}"
        );
        assert!(found[0].1.contains("glossary.md#kv-cache"), "{found:?}");
    }

    #[test]
    fn a_link_to_the_glossary_or_the_defining_page_passes() {
        assert!(problems(
            "A [KV cache](glossary.md#kv-cache), then a KV cache."
        )
        .is_empty());
        assert!(
            problems("A [KV caches](10_greedy_decode.md#term-kv-cache).")
                .is_empty()
        );
        assert!(problems("The [encoder](introduction.md) reads.").is_empty());
    }

    #[test]
    fn a_link_elsewhere_fails_and_only_the_first_mention_counts() {
        let found = problems("The [KV cache](12_sdpa_bench.md) and a [KV cache](glossary.md#kv-cache).");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.contains("which does not define it"), "{found:?}");
        let found = problems("A decoder, then [decoder](glossary.md#decoder).");
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn a_mention_inside_a_longer_term_belongs_to_it() {
        let glossary = format!(
            "{GLOSSARY}\n## Machine learning\n\n| term | in short | defined in |\n|---|---|---|\n\
             | <a id=\"cache\"></a>cache | a store | [chapter 10](10_greedy_decode.md#c) |\n"
        );
        let terms = glossary_terms(&glossary);
        let page = "A [KV cache](glossary.md#kv-cache), then a cache.";
        let found = check_page(page, &terms, &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].1.starts_with("'cache' first appears here"),
            "{found:?}"
        );
        assert_eq!(
            check_page("A [KV cache](glossary.md#kv-cache).", &terms, &[]),
            []
        );
    }

    #[test]
    fn a_term_defined_on_a_page_read_before_needs_no_link() {
        let terms = glossary_terms(GLOSSARY);
        let page = "The encoder reads, the KV cache keeps.";
        let found = check_page(page, &terms, &["introduction.md"]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.starts_with("'KV cache'"), "{found:?}");
        assert_eq!(check_page(page, &terms, &[]).len(), 2);
    }

    #[test]
    fn a_term_defined_in_place_passes() {
        assert!(problems(
            "A <a id=\"term-beam-search\"></a>*beam search* keeps the best."
        )
        .is_empty());
    }

    #[test]
    fn an_anchor_defines_its_own_term_only() {
        let found =
            problems("A <a id=\"term-seed\"></a>*beam search* keeps the best.");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.starts_with("'beam search' first appears here"));
        // The anchor the glossary's "defined in" links to, and term- with the
        // glossary's anchor, are the term's own.
        assert_eq!(
            problems("A <a id=\"term-normal\"></a>*normal distribution* here."),
            []
        );
        assert_eq!(problems("An <a id=\"term-encoder\"></a>*encoder*."), []);
        // An anchor earlier on the line, before another word, defines nothing here.
        let found =
            problems("<a id=\"term-beam-search\"></a>A sort of beam search.");
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn a_plural_in_ies_is_a_mention_of_the_term_in_y() {
        let glossary = format!(
            "{GLOSSARY}\n## Machine learning\n\n| term | in short | defined in |\n|---|---|---|\n\
             | <a id=\"probability\"></a>probability | a share | [chapter 02](02_attention.md#p) |\n"
        );
        let terms = glossary_terms(&glossary);
        let found = check_page("Rows of probabilities.\n", &terms, &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.starts_with("'probability' first appears here"));
        let linked =
            "Rows of [probabilities](glossary.md#probability), a probability.";
        assert_eq!(check_page(linked, &terms, &[]), []);
    }

    #[test]
    fn links_to_the_glossary_are_checked_on_exercise_pages_too() {
        let dir = std::env::temp_dir()
            .join(format!("terms-exercises-{}", std::process::id()));
        fs::create_dir_all(dir.join("exercises")).unwrap();
        fs::write(dir.join("glossary.md"), GLOSSARY).unwrap();
        fs::write(
            dir.join("exercises/10_decode.md"),
            "Keep a [cache](glossary.md#kv-cache) and a [beam](glossary.md#beams).\n",
        )
        .unwrap();
        let found = check_glossary_links(&dir, &glossary_terms(GLOSSARY));
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].0.ends_with("exercises/10_decode.md"), "{found:?}");
        assert!(
            found[0].2.starts_with("link to glossary.md#beams:"),
            "{found:?}"
        );
    }

    #[test]
    fn code_math_headings_targets_and_everyday_words_are_not_mentions() {
        let page = "\
# The encoder

```rust
let kv_cache = encoder(x); // the KV cache
```

Call `encoder` with $\\mathrm{decoder}$ and see [the page](05_decoder.md#decoder), a
view, the answer key.
";
        assert!(problems(page).is_empty(), "{:?}", problems(page));
    }

    #[test]
    fn a_term_without_an_anchor_is_reported() {
        let dir = std::env::temp_dir()
            .join(format!("terms-check-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("glossary.md"), GLOSSARY).unwrap();
        fs::write(dir.join("instructors.md"), "Uses a beam search.\n").unwrap();
        fs::write(dir.join("other.md"), "A [beam](glossary.md#beam-search).\n")
            .unwrap();
        let found = check_glossary_terms(&dir);
        fs::remove_dir_all(&dir).unwrap();
        let shown: Vec<String> = found
            .iter()
            .map(|(f, l, m)| {
                format!("{}:{l}: {m}", f.file_name().unwrap().to_string_lossy())
            })
            .collect();
        assert_eq!(shown.len(), 4, "{shown:#?}");
        assert!(shown[0].starts_with(
            "glossary.md:10: glossary term 'query' has no anchor"
        ));
        assert!(shown[1].starts_with(
            "glossary.md:11: glossary term 'beam search' has no anchor"
        ));
        assert!(shown[2]
            .starts_with("instructors.md:1: 'beam search' first appears here"));
        assert_eq!(
            shown[3],
            "other.md:1: link to glossary.md#beam-search: the glossary has no term with \
             that anchor"
        );
    }
}
