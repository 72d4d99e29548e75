//! The shortcut check, `assert_written_by_hand`: whether an exercise's solution
//! reaches the course's own version of what it asks for, read from the code of the
//! exercise files — the region, and every helper, constant, macro and import it
//! uses, through renamed imports, module aliases, globs and type aliases.
use std::sync::Once;

use super::region_code;

/// Every exercise file, by module name, for `assert_written_by_hand`: an exercise's
/// code can reach into another file (`use crate::ch12_sdpa_bench::helper`), and a
/// helper or a renamed import there counts as its own.
pub const EXERCISE_FILES: &[(&str, &str)] = &[
    (
        "ch01_embedding",
        include_str!("../../src/ch01_embedding.rs"),
    ),
    (
        "ch02_attention",
        include_str!("../../src/ch02_attention.rs"),
    ),
    (
        "ch03_feed_forward",
        include_str!("../../src/ch03_feed_forward.rs"),
    ),
    ("ch04_encoder", include_str!("../../src/ch04_encoder.rs")),
    ("ch05_decoder", include_str!("../../src/ch05_decoder.rs")),
    (
        "ch06_transformer",
        include_str!("../../src/ch06_transformer.rs"),
    ),
    (
        "ch07_mask_tests",
        include_str!("../../src/ch07_mask_tests.rs"),
    ),
    (
        "ch08_reverse_data",
        include_str!("../../src/ch08_reverse_data.rs"),
    ),
    (
        "ch09_train_reverse",
        include_str!("../../src/ch09_train_reverse.rs"),
    ),
    (
        "ch10_greedy_decode",
        include_str!("../../src/ch10_greedy_decode.rs"),
    ),
    (
        "ch11_cross_attention",
        include_str!("../../src/ch11_cross_attention.rs"),
    ),
    (
        "ch12_sdpa_bench",
        include_str!("../../src/ch12_sdpa_bench.rs"),
    ),
    ("ch13_ablation", include_str!("../../src/ch13_ablation.rs")),
];

/// The crate's module list, to check that `EXERCISE_FILES` names every file.
const EXERCISE_LIB: &str = include_str!("../../src/lib.rs");

/// One token of Rust source: an identifier, `::`, a punctuation character or a
/// number. Strings and characters become `"…"`, so that a name inside a message does
/// not count as a use; comments are dropped. `line` counts from 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub text: String,
    pub line: usize,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident(s: &str) -> bool {
    s.chars().next().is_some_and(is_ident_start)
}

/// The tokens of `src`: as much of Rust's lexer as reading names needs. Comments
/// (nested block comments too), strings (raw and byte strings too), characters and
/// lifetimes are told apart.
pub fn tokenize(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut out) = (0, 0, Vec::new());
    let mut push = |text: String, line: usize| out.push(Token { text, line });
    while i < c.len() {
        let start = i;
        let (ch, next) = (c[i], c.get(i + 1).copied());
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_at(&c, i) {
            // r"…", r#"…"#, br"…": no escapes; it ends at a quote and as many #.
            let mut j =
                i + c[i..].iter().position(|&x| x == '"').unwrap_or(0) + 1;
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            while j < c.len() && !c[j..].starts_with(&close) {
                j += 1;
            }
            i = (j + close.len()).min(c.len());
            push("\"…\"".into(), line);
        } else if ch == '"' || (ch == 'b' && next == Some('"')) {
            i += if ch == 'b' { 2 } else { 1 };
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            push("\"…\"".into(), line);
        } else if ch == '\'' {
            // '\n' and 'x' are characters; 'a, with no closing quote, a lifetime.
            if next == Some('\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                push("'…'".into(), line);
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
                push("'…'".into(), line);
            } else {
                i += 1; // a lifetime: its name follows, read as an identifier
            }
        } else if ch == 'r'
            && next == Some('#')
            && c.get(i + 2).is_some_and(|&x| is_ident_start(x))
        {
            i += 2; // r#name is the identifier name
        } else if is_ident_start(ch) || ch.is_ascii_digit() {
            while i < c.len() && (c[i] == '_' || c[i].is_alphanumeric()) {
                i += 1;
            }
            push(c[start..i].iter().collect(), line);
        } else if ch == ':' && next == Some(':') {
            i += 2;
            push("::".into(), line);
        } else {
            i += 1;
            push(ch.to_string(), line);
        }
        line += c[start..i].iter().filter(|&&x| x == '\n').count();
    }
    out
}

/// The number of `#` of a raw string that starts at `i`, if one does.
fn raw_string_at(c: &[char], i: usize) -> Option<usize> {
    if i > 0 && (c[i - 1] == '_' || c[i - 1].is_alphanumeric()) {
        return None;
    }
    let mut j = i + usize::from(c.get(i) == Some(&'b'));
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = c[j..].iter().take_while(|&&x| x == '#').count();
    (c.get(j + hashes) == Some(&'"')).then_some(hashes)
}

/// What a `use`, an `extern crate … as` or a `type X = path;` brings into scope.
#[derive(Debug, Clone, PartialEq)]
pub enum Binding {
    /// `local` stands for `path` (`use a::b::c as local;`, `use a::b::{self}`).
    Name { local: String, path: Vec<String> },
    /// `use path::*;`
    Glob { path: Vec<String> },
}

/// The bindings of the use tree `toks` (after `use`, before `;`) under `prefix`.
pub fn use_tree(toks: &[&str], prefix: &[String], out: &mut Vec<Binding>) {
    let mut path = prefix.to_vec();
    let mut i = 0;
    while i < toks.len() {
        match toks[i] {
            "::" => i += 1,
            "*" => {
                out.push(Binding::Glob { path });
                return;
            }
            "{" => {
                let (mut depth, mut from) = (0, i + 1);
                for j in i..toks.len() {
                    match toks[j] {
                        "{" => depth += 1,
                        "}" | "," if depth == 1 => {
                            use_tree(&toks[from..j], &path, out);
                            from = j + 1;
                            if toks[j] == "}" {
                                return;
                            }
                        }
                        "}" => depth -= 1,
                        _ => {}
                    }
                }
                return;
            }
            "as" => {
                if let Some(&local) =
                    toks.get(i + 1).filter(|t| is_ident(t) && **t != "_")
                {
                    out.push(Binding::Name {
                        local: local.into(),
                        path,
                    });
                }
                return;
            }
            "self" if !path.is_empty() => {
                if toks.get(i + 1) != Some(&"as") {
                    let local = path[path.len() - 1].clone();
                    out.push(Binding::Name { local, path });
                    return;
                }
                i += 1; // `self as x`: the alias follows
            }
            t if is_ident(t) => {
                path.push(t.to_string());
                i += 1;
            }
            _ => return,
        }
    }
    if path.len() > prefix.len() {
        let local = path[path.len() - 1].clone();
        out.push(Binding::Name { local, path });
    }
}

/// One item at the top level of an exercise file: a `use`, a `fn`, an `impl` …
#[derive(Debug, Clone)]
struct Item {
    toks: Vec<Token>,
    /// The names it defines (a `use`'s local names, an `impl` block's functions).
    defines: Vec<String>,
    bindings: Vec<Binding>,
    /// How a message names it.
    what: String,
}

/// An exercise file, read for `assert_written_by_hand`.
struct FileModel {
    module: String,
    items: Vec<Item>,
    /// The tokens of each exercise region, by id.
    regions: Vec<(String, Vec<Token>)>,
}

const DEFINING: [&str; 9] = [
    "fn", "const", "static", "struct", "enum", "trait", "type", "mod", "union",
];

impl FileModel {
    fn new(module: &str, source: &str) -> FileModel {
        let toks = tokenize(source);
        // The regions around each line; a marker's line belongs to its region.
        let (mut open, mut around) = (Vec::<String>::new(), Vec::new());
        for l in source.lines() {
            let t = l.trim();
            if let Some(id) = t.strip_prefix("// ANCHOR: ") {
                open.push(id.trim().to_string());
            }
            around.push(open.clone());
            if let Some(id) = t.strip_prefix("// ANCHOR_END: ") {
                open.retain(|o| o != id.trim());
            }
        }
        let in_a_region =
            |line: usize| around.get(line).is_some_and(|r| !r.is_empty());
        let mut regions: Vec<(String, Vec<Token>)> = Vec::new();
        for t in &toks {
            for id in around.get(t.line).into_iter().flatten() {
                match regions.iter_mut().find(|(r, _)| r == id) {
                    Some((_, v)) => v.push(t.clone()),
                    None => regions.push((id.clone(), vec![t.clone()])),
                }
            }
        }
        // Items: runs of tokens at depth 0 that end at a `;` or a closing brace.
        let (mut items, mut depth, mut from) = (Vec::new(), 0i32, 0);
        for (j, t) in toks.iter().enumerate() {
            match t.text.as_str() {
                "{" | "(" | "[" => depth += 1,
                "}" | ")" | "]" => depth -= 1,
                _ => {}
            }
            if (depth == 0 && (t.text == ";" || t.text == "}"))
                || j + 1 == toks.len()
            {
                items.push(Self::item(toks[from..=j].to_vec(), &in_a_region));
                from = j + 1;
            }
        }
        FileModel {
            module: module.into(),
            items,
            regions,
        }
    }

    fn item(toks: Vec<Token>, in_a_region: &dyn Fn(usize) -> bool) -> Item {
        let text: Vec<&str> = toks.iter().map(|t| t.text.as_str()).collect();
        // Past the attributes and the visibility: what the item is.
        let mut k = 0;
        while k < text.len() {
            match text[k] {
                "#" => {
                    let mut d = 0;
                    for t in &text[k + 1..] {
                        k += 1;
                        d += i32::from(*t == "[") - i32::from(*t == "]");
                        if d == 0 {
                            break;
                        }
                    }
                    k += 1;
                }
                "pub" if text.get(k + 1) == Some(&"(") => {
                    k += text[k..].iter().position(|t| *t == ")").unwrap_or(0)
                        + 1
                }
                "pub" => k += 1,
                _ => break,
            }
        }
        let head = &text[k.min(text.len())..];
        let mut bindings = Vec::new();
        match head {
            ["use", rest @ ..] => use_tree(
                rest.strip_suffix(&[";"]).unwrap_or(rest),
                &[],
                &mut bindings,
            ),
            ["extern", "crate", name, "as", local, ..] => {
                bindings.push(Binding::Name {
                    local: local.to_string(),
                    path: vec![name.to_string()],
                })
            }
            ["type", local, "=", rest @ ..]
                if rest
                    .iter()
                    .all(|t| is_ident(t) || *t == "::" || *t == ";") =>
            {
                bindings.push(Binding::Name {
                    local: local.to_string(),
                    path: rest
                        .iter()
                        .filter(|t| is_ident(t))
                        .map(|t| t.to_string())
                        .collect(),
                })
            }
            // `mod m { pub use path::*; }` makes m an alias of path; a `use … as x`
            // inside it binds x (read as `m::x`).
            ["mod", name, "{", inner @ ..] => {
                let mut found = Vec::new();
                for (at, _) in
                    inner.iter().enumerate().filter(|(_, t)| **t == "use")
                {
                    let end = inner[at..]
                        .iter()
                        .position(|t| *t == ";")
                        .map_or(inner.len(), |e| at + e);
                    use_tree(&inner[at + 1..end], &[], &mut found);
                }
                for b in found {
                    bindings.push(match b {
                        Binding::Glob { path } => Binding::Name {
                            local: name.to_string(),
                            path,
                        },
                        named => named,
                    });
                }
            }
            _ => {}
        }
        let mut defines: Vec<String> = bindings
            .iter()
            .filter_map(|b| match b {
                Binding::Name { local, .. } => Some(local.clone()),
                Binding::Glob { .. } => None,
            })
            .collect();
        for (j, w) in text.windows(2).enumerate() {
            // What is defined inside an exercise region is local to its function.
            if in_a_region(toks[j].line) || !is_ident(w[1]) {
                continue;
            }
            let macro_name =
                w[0] == "!" && j > 0 && text[j - 1] == "macro_rules";
            if DEFINING.contains(&w[0]) || macro_name {
                defines.push(w[1].to_string());
            }
        }
        let line = toks.first().map_or(0, |t| t.line) + 1;
        let what = match head.first() {
            Some(&"use") => format!("the `use` at line {line}"),
            Some(&"impl") => format!("the `impl` block at line {line}"),
            _ => match head
                .iter()
                .find(|t| DEFINING.contains(t) || **t == "macro_rules")
            {
                Some(kw) if !defines.is_empty() => {
                    format!("`{kw} {}`", defines[0])
                }
                _ => format!("the item at line {line}"),
            },
        };
        Item {
            toks,
            defines,
            bindings,
            what,
        }
    }
}

/// Whether `pattern` (tokens) starts at `code[at]`. A pattern of one identifier
/// matches every identifier that contains it (`cross_entropy` finds
/// `cross_entropy_loss`), except a name of the learner's own (`own`: a helper, a
/// variable) unless a path leads to it (`x::name`); in a longer pattern every token
/// must match whole.
fn pattern_at(
    pattern: &[String],
    code: &[String],
    at: usize,
    own: &[String],
) -> bool {
    if let [one] = pattern {
        let reached_by_path = at > 0 && code[at - 1] == "::";
        return is_ident(&code[at])
            && code[at].contains(one.as_str())
            && (reached_by_path || !own.contains(&code[at]));
    }
    code.len() >= at + pattern.len() && code[at..at + pattern.len()] == *pattern
}

/// `tok` with its leading name expanded through `bindings`, again and again
/// (`use transformer_course as tc; use tc::attention as at;`).
fn expand(tok: &str, bindings: &[Binding], depth: usize) -> Vec<String> {
    let found = bindings.iter().find_map(|b| match b {
        Binding::Name { local, path } if local == tok && path[0] != tok => {
            Some(path)
        }
        _ => None,
    });
    match found {
        Some(path) if depth < 8 => {
            let mut out = expand(&path[0], bindings, depth + 1);
            out.extend(
                path[1..].iter().flat_map(|s| ["::".to_string(), s.clone()]),
            );
            out
        }
        _ => vec![tok.to_string()],
    }
}

/// The names that hold a value of type `ty` in `toks`: parameters and variables
/// declared `x: &ty` (or `&mut ty`, with a lifetime, a path, or an alias of ty), and
/// `let y = &x;` of such a name, so that `<Encoder>.forward(` finds `e.forward(` in
/// `fn run(e: &Encoder) { e.forward(..) }`.
fn names_of_type(
    toks: &[Token],
    ty: &str,
    bindings: &[Binding],
) -> Vec<String> {
    let text: Vec<&str> = toks.iter().map(|t| t.text.as_str()).collect();
    let is_ty =
        |t: &str| expand(t, bindings, 0).last().is_some_and(|l| l == ty);
    let mut typed: Vec<String> = Vec::new();
    for j in 0..text.len().saturating_sub(2) {
        if !is_ident(text[j]) || text[j + 1] != ":" {
            continue;
        }
        let spec: Vec<&str> = text[j + 2..]
            .iter()
            .copied()
            .take_while(|t| {
                *t == "&" || *t == "mut" || *t == "::" || is_ident(t)
            })
            .collect();
        if spec.last().is_some_and(|t| is_ty(t)) {
            typed.push(text[j].to_string());
        }
    }
    loop {
        let before = typed.len();
        for (j, w) in text.windows(3).enumerate() {
            if w[0] != "let" {
                continue;
            }
            let at = j + usize::from(w[1] == "mut") + 1;
            let (Some(name), Some("=")) =
                (text.get(at), text.get(at + 1).copied())
            else {
                continue;
            };
            let value: Vec<&str> = text[at + 2..]
                .iter()
                .copied()
                .take_while(|t| *t != ";")
                .collect();
            let plain = value
                .iter()
                .all(|t| matches!(*t, "&" | "*" | "(" | ")") || is_ident(t));
            let idents: Vec<&&str> =
                value.iter().filter(|t| is_ident(t)).collect();
            if plain
                && idents.len() == 1
                && typed.iter().any(|n| n == *idents[0])
                && !typed.iter().any(|n| n == name)
            {
                typed.push(name.to_string());
            }
        }
        if typed.len() == before {
            return typed;
        }
    }
}

/// One place where a solution reaches a forbidden call.
#[derive(Debug, Clone, PartialEq)]
pub struct ForbiddenUse {
    /// The pattern, as the test gave it.
    pub call: String,
    /// The code as written there.
    pub written: String,
    /// Where: the exercise's code, or a helper, constant or `use` it reaches.
    pub place: String,
}

/// Where the solution of exercise region `id` reaches one of `calls` (each Rust
/// code, read as tokens). It reads the region's code; every item of its file that
/// the code names (helpers, constants, `impl` blocks, macros, `use` lines), and so
/// on from what that reaches; and the items of another exercise file whose module
/// the code names (`crate::ch12_sdpa_bench::helper`). Names are resolved through
/// `use … as`, module aliases, globs and `type` aliases before the patterns are
/// looked for. Shipped code that an exercise does not reach (another exercise's
/// region, say, which may use the call legitimately) does not count.
pub fn forbidden_uses(
    files: &[(&str, &str)],
    id: &str,
    calls: &[&str],
) -> Vec<ForbiddenUse> {
    let models: Vec<FileModel> =
        files.iter().map(|(m, s)| FileModel::new(m, s)).collect();
    let home = models
        .iter()
        .position(|f| f.regions.iter().any(|(r, _)| r == id))
        .unwrap_or_else(|| {
            panic!("test bug: no exercise file has region {id}")
        });
    let region = models[home].regions.iter().find(|(r, _)| r == id).unwrap();
    let mut chunks: Vec<(Vec<Token>, String)> =
        vec![(region.1.clone(), "the exercise's code".to_string())];
    let mut names: Vec<String> = Vec::new();
    let (mut reached, mut linked) = (Vec::<(usize, usize)>::new(), vec![home]);
    let mut bindings: Vec<Binding> = Vec::new();
    let mut read = 0;
    loop {
        for (toks, _) in &chunks[read..] {
            names.extend(
                toks.iter()
                    .filter(|t| is_ident(&t.text))
                    .map(|t| t.text.clone()),
            );
        }
        read = chunks.len();
        for (f, m) in models.iter().enumerate() {
            if !linked.contains(&f) && names.contains(&m.module) {
                linked.push(f);
            }
        }
        for &f in &linked {
            for (k, item) in models[f].items.iter().enumerate() {
                if !reached.contains(&(f, k))
                    && item.defines.iter().any(|d| names.contains(d))
                {
                    reached.push((f, k));
                    bindings.extend(item.bindings.iter().cloned());
                    let place = if f == home {
                        format!(
                            "{}, which the exercise's code reaches",
                            item.what
                        )
                    } else {
                        format!(
                            "{} of {}.rs, which the exercise's code reaches",
                            item.what, models[f].module
                        )
                    };
                    chunks.push((item.toks.clone(), place));
                }
            }
        }
        if read == chunks.len() {
            break;
        }
    }
    // A `use` inside a function body (the region's own, or a helper's) binds names
    // there; a glob there shadows even the file's own items, so it applies to every
    // name (`inner`), where a glob at the top of a file yields to them.
    let mut inner: Vec<Binding> = Vec::new();
    for (n, (toks, _)) in chunks.iter().enumerate() {
        let text: Vec<&str> = toks.iter().map(|t| t.text.as_str()).collect();
        // The chunks after the region's are items; a `use` item is read already.
        if n > 0 && matches!(text[..], ["use", ..] | ["pub", "use", ..]) {
            continue;
        }
        for (at, _) in text.iter().enumerate().filter(|(_, t)| **t == "use") {
            let end = text[at..]
                .iter()
                .position(|t| *t == ";")
                .map_or(text.len(), |e| at + e);
            use_tree(&text[at + 1..end], &[], &mut inner);
        }
    }
    bindings.extend(
        inner
            .iter()
            .filter(|b| matches!(b, Binding::Name { .. }))
            .cloned(),
    );
    let globs: Vec<(Vec<String>, bool)> = linked
        .iter()
        .flat_map(|&f| models[f].items.iter().flat_map(|i| i.bindings.iter()))
        .map(|b| (b, false))
        .chain(inner.iter().map(|b| (b, true)))
        .filter_map(|(b, in_a_body)| match b {
            Binding::Glob { path } => Some((path.clone(), in_a_body)),
            Binding::Name { .. } => None,
        })
        .collect();
    let modules: Vec<&String> = linked
        .iter()
        .flat_map(|&f| models[f].items.iter())
        .filter_map(|i| match i.toks.iter().position(|t| t.text == "mod") {
            Some(k) if i.toks.get(k + 2).is_some_and(|t| t.text == "{") => {
                Some(&i.toks[k + 1].text)
            }
            _ => None,
        })
        .collect();
    // The learner's own names: what the files' items and the reached code define,
    // less what an import brings in under that name.
    let imported: Vec<&String> = linked
        .iter()
        .flat_map(|&f| models[f].items.iter().flat_map(|i| i.bindings.iter()))
        .filter_map(|b| match b {
            Binding::Name { local, .. } => Some(local),
            Binding::Glob { .. } => None,
        })
        .collect();
    let mut own: Vec<String> = linked
        .iter()
        .flat_map(|&f| models[f].items.iter())
        .filter(|i| i.bindings.is_empty())
        .flat_map(|i| i.defines.iter().cloned())
        .collect();
    // Local variables shadow every import, globs in a body included.
    let mut locals: Vec<String> = Vec::new();
    for (toks, _) in &chunks {
        for w in toks.windows(2) {
            if matches!(w[0].text.as_str(), "let" | "mut" | "for")
                && is_ident(&w[1].text)
            {
                locals.push(w[1].text.clone());
            }
            if w[0].text == "fn" && is_ident(&w[1].text) {
                own.push(w[1].text.clone());
            }
        }
    }
    own.extend(locals.iter().cloned());
    own.retain(|n| !imported.contains(&n));
    let defined_here: Vec<&String> = models[home]
        .items
        .iter()
        .flat_map(|i| i.defines.iter())
        .collect();
    let patterns: Vec<(&str, Vec<String>)> = calls
        .iter()
        .map(|c| (*c, tokenize(c).into_iter().map(|t| t.text).collect()))
        .collect();
    // `<T>.method(` patterns: the receivers of type T, read from all the code
    // reached and the exercise's own signature.
    let mut everything: Vec<Token> = models[home]
        .items
        .iter()
        .find(|i| i.toks.iter().any(|t| Some(t) == region.1.first()))
        .map_or(vec![], |i| i.toks.clone());
    everything.extend(chunks.iter().flat_map(|(t, _)| t.iter().cloned()));
    let typed: Vec<(String, Vec<String>)> = patterns
        .iter()
        .filter_map(|(_, p)| match p.as_slice() {
            [lt, ty, gt, ..] if lt == "<" && gt == ">" => {
                Some((ty.clone(), names_of_type(&everything, ty, &bindings)))
            }
            _ => None,
        })
        .collect();
    let mut found = Vec::new();
    for (toks, place) in &chunks {
        for glob in std::iter::once(None).chain(globs.iter().map(Some)) {
            // The code with every name spelled out, and where each token came from.
            let (mut code, mut from) = (Vec::new(), Vec::new());
            for (j, t) in toks.iter().enumerate() {
                let prev = j.checked_sub(1).map(|p| toks[p].text.as_str());
                // A name in a module of these files (`m::x`) is looked up as x.
                let in_a_module = prev == Some("::")
                    && j >= 2
                    && modules.contains(&&toks[j - 2].text);
                let leads = is_ident(&t.text)
                    && (in_a_module
                        || !matches!(
                            prev,
                            Some("::" | "." | "let" | "mut" | "fn" | "as")
                        ));
                let mut spelled = if leads {
                    expand(&t.text, &bindings, 0)
                } else {
                    vec![t.text.clone()]
                };
                if let Some((g, in_a_body)) =
                    glob.filter(|_| leads && spelled.len() == 1)
                {
                    let local = locals.contains(&t.text);
                    if !local
                        && (*in_a_body || !defined_here.contains(&&t.text))
                    {
                        let mut p: Vec<String> = g
                            .iter()
                            .flat_map(|s| [s.clone(), "::".to_string()])
                            .collect();
                        p.push(t.text.clone());
                        spelled = p;
                    }
                }
                from.extend(std::iter::repeat_n(j, spelled.len()));
                code.extend(spelled);
            }
            for (call, pattern) in &patterns {
                if pattern.is_empty() {
                    continue;
                }
                for at in 0..code.len() {
                    let (hit, len) = match pattern.as_slice() {
                        [lt, ty, gt, rest @ ..] if lt == "<" && gt == ">" => {
                            let names =
                                &typed.iter().find(|(t, _)| t == ty).unwrap().1;
                            let end = at + 1 + rest.len();
                            let ok = names.contains(&code[at])
                                && code.len() >= end
                                && code[at + 1..end] == *rest;
                            (ok, rest.len() + 1)
                        }
                        _ => (
                            pattern_at(pattern, &code, at, &own),
                            pattern.len(),
                        ),
                    };
                    if hit {
                        let (a, b) =
                            (from[at], from[(at + len).min(code.len()) - 1]);
                        let written: Vec<&str> = toks[a..=b]
                            .iter()
                            .map(|t| t.text.as_str())
                            .collect();
                        let hit = ForbiddenUse {
                            call: call.to_string(),
                            written: written.concat(),
                            place: place.clone(),
                        };
                        if !found.contains(&hit) {
                            found.push(hit);
                        }
                    }
                }
            }
        }
    }
    found
}

/// Fails when the solution of exercise `id` reaches one of `calls`: (what it may not
/// use, what to write instead). An exercise that asks for a thing by hand is not done
/// by calling the course's version of it, though the numbers come out right and
/// every other test of the exercise passes. `source` is the exercise's file; the
/// check follows the solution's code into the helpers, imports and aliases it uses
/// anywhere in the exercise files (see `forbidden_uses`).
#[track_caller]
pub fn assert_written_by_hand(source: &str, id: &str, calls: &[(&str, &str)]) {
    let _ = region_code(source, id); // a blank exercise fails at its todo!()
    check_the_reader();
    assert!(
        EXERCISE_FILES.iter().any(|(_, text)| *text == source),
        "test bug: {id}'s file is not in EXERCISE_FILES"
    );
    let names: Vec<&str> = calls.iter().map(|(c, _)| *c).collect();
    if let Some(hit) = forbidden_uses(EXERCISE_FILES, id, &names).first() {
        let instead = calls.iter().find(|(c, _)| *c == hit.call).unwrap().1;
        // `<Encoder>.forward(` reads as "`.forward(..)` on a value of type `Encoder`".
        let call =
            match hit.call.strip_prefix('<').and_then(|c| c.split_once('>')) {
                Some((ty, method)) => {
                    format!("`{method}..)` on a value of type `{ty}`")
                }
                None => format!("`{}`", hit.call),
            };
        let via = if hit.written.replace(' ', "") == hit.call.replace(' ', "") {
            String::new()
        } else {
            format!(" (written `{}`)", hit.written)
        };
        let found = format!(
            "{id} calls {call}{via} in {}: that is the course's own version of what this \
             exercise asks you to write",
            hit.place
        );
        panic!("{}", super::shortcut_message(&found, instead));
    }
}

/// Runs the reader of `forbidden_uses` on examples of every way round it, once per
/// test process: a reader that misreads them would let a shortcut pass.
fn check_the_reader() {
    static CHECKED: Once = Once::new();
    CHECKED.call_once(|| {
        for (module, _) in EXERCISE_FILES {
            assert!(
                EXERCISE_LIB.contains(&format!("pub mod {module};")),
                "test bug: EXERCISE_FILES names {module}, which lib.rs does not declare"
            );
        }
        let declared = EXERCISE_LIB.lines().filter(|l| l.starts_with("pub mod ")).count();
        assert_eq!(
            declared,
            EXERCISE_FILES.len(),
            "test bug: lib.rs declares an exercise file that EXERCISE_FILES leaves out"
        );
        let file = |extra: &str, body: &str| {
            format!(
                "//! x\nuse tch::Tensor;\nuse course::masks::{{self, keep}};\n\
                 pub fn ex(ids: &Tensor) -> Tensor {{\n    // ANCHOR: ex99_x\n{body}\n    \
                 // ANCHOR_END: ex99_x\n}}\n\npub fn other() {{\n    // ANCHOR: ex99_y\n    \
                 masks::make_mask(1)\n    // ANCHOR_END: ex99_y\n}}\n{extra}\n"
            )
        };
        let other = "//! y\npub use course::masks::make_mask as hidden;\n\
                     pub fn far(x: i64) -> i64 { hidden(x) }\n";
        let hits = |extra: &str, body: &str| {
            let text = file(extra, body);
            let files = [("ch99_x", text.as_str()), ("ch98_y", other)];
            let calls = ["masks::make_mask", "make_mask", "enc.forward(", "<Enc>.forward("];
            !forbidden_uses(&files, "ex99_x", &calls).is_empty()
        };
        let cases: [(&str, &str, bool); 26] = [
            ("", "    keep(ids) // make_mask(ids) is not called", false),
            ("", "    let s = \"masks::make_mask\"; keep(ids)", false),
            ("fn helper(i: &Tensor) -> Tensor { keep(i) }", "    helper(ids)", false),
            ("", "    masks::make_mask(ids)", true),
            ("use course::masks::make_mask as mm;", "    mm(ids)", true),
            ("use course::masks as m2;", "    m2::make_mask(ids)", true),
            ("use course::masks::*;", "    make_mask(ids)", true),
            ("use course::{masks::{make_mask as a, keep as b}};", "    a(ids)", true),
            ("fn helper(i: &Tensor) -> Tensor { masks::make_mask(i) }", "    helper(ids)", true),
            ("const F: fn(&Tensor) -> Tensor = masks::make_mask;", "    F(ids)", true),
            ("", "    crate::ch98_y::far(ids)", true),
            ("", "    enc.forward(&x)", true),
            ("mod m { pub use course::masks::*; }", "    m::make_mask(ids)", true),
            ("mod m { pub use course::masks::make_mask as z; }", "    m::z(ids)", true),
            ("type E = course::Enc;", "    E::forward(enc, &x)", false),
            ("fn run(e: &Enc) -> Tensor { e.forward(&x) }", "    run(enc)", true),
            ("fn run(e: &Enc) -> Tensor { let f = &e; f.forward(&x) }", "    run(enc)", true),
            ("fn run(e: &Other) -> Tensor { e.forward(&x) }", "    run(enc)", false),
            ("fn make_mask_mine(i: &Tensor) -> Tensor { keep(i) }", "    make_mask_mine(ids)", false),
            ("", "    let make_mask = keep(ids);\n    make_mask", false),
            ("use course::masks::make_mask;", "    let m = |i| make_mask(i);\n    m(ids)", true),
            ("", "    let make_mask = course::masks::make_mask;\n    make_mask(ids)", true),
            ("", "    use course::masks as m3;\n    m3::make_mask(ids)", true),
            ("pub fn make_mask() {}", "    use course::masks::*;\n    make_mask(ids)", true),
            ("pub fn make_mask() {}", "    make_mask()", false),
            ("", "    use course::masks::*;\n    let make_mask = keep(ids);\n    make_mask", false),
        ];
        for (extra, body, want) in cases {
            assert_eq!(
                hits(extra, body),
                want,
                "test bug: the shortcut reader misreads `{extra}` with `{body}`"
            );
        }
    });
}
