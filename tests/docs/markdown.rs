//! Just enough Markdown for the checks: fenced blocks, code spans, links and headings (with
//! GitHub's anchors), and the shell commands a page shows.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::shell::shell_words;
use crate::ROOT;

pub struct Doc {
    /// Relative to the repository root.
    pub path: PathBuf,
    pub text: String,
    /// The text with fenced blocks blanked (line numbers kept).
    pub prose: String,
    pub fences: Vec<Fence>,
}

pub struct Fence {
    pub lang: String,
    /// 1-based line of the opening fence.
    pub line: usize,
    pub body: String,
}

impl Doc {
    pub fn read(relative: &str) -> Doc {
        let path = PathBuf::from(relative);
        let text = std::fs::read_to_string(Path::new(ROOT).join(&path))
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
        let mut prose = String::new();
        let mut fences = Vec::new();
        let mut open: Option<(String, String, usize)> = None;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            let is_fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
            match (&mut open, is_fence) {
                (None, true) => {
                    let lang = trimmed.trim_start_matches(['`', '~']).trim().to_string();
                    open = Some((lang, String::new(), i + 1));
                }
                (Some(_), true) => {
                    let (lang, body, line) = open.take().unwrap();
                    fences.push(Fence { lang, line, body });
                }
                (Some((_, body, _)), false) => {
                    body.push_str(line);
                    body.push('\n');
                }
                (None, false) => prose.push_str(line),
            }
            prose.push('\n');
        }
        assert!(open.is_none(), "{relative}: a fenced block is not closed");
        Doc {
            path,
            text,
            prose,
            fences,
        }
    }

    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// The code spans of the prose with their line, contents unescaped (`\|` in tables).
    pub fn code_spans(&self) -> Vec<(usize, String)> {
        code_spans(&self.prose)
            .into_iter()
            .map(|(start, _, content)| (line_of(&self.prose, start), content))
            .collect()
    }

    /// The link targets of the prose (outside code spans), with their line.
    pub fn links(&self) -> Vec<(usize, String)> {
        let mut blanked = self.prose.clone().into_bytes();
        for (start, end, _) in code_spans(&self.prose) {
            blanked[start..end].fill(b' ');
        }
        let blanked = String::from_utf8(blanked).unwrap();
        let mut out = Vec::new();
        for (i, _) in blanked.match_indices("](") {
            let rest = &blanked[i + 2..];
            if let Some(end) = rest.find(')') {
                out.push((line_of(&blanked, i), rest[..end].trim().to_string()));
            }
        }
        out
    }

    /// GitHub's anchors for the headings of this page.
    pub fn anchors(&self) -> BTreeSet<String> {
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut out = BTreeSet::new();
        for line in self.prose.lines() {
            let Some(heading) = line
                .strip_prefix('#')
                .map(|h| h.trim_start_matches('#'))
                .filter(|h| h.starts_with(' '))
            else {
                continue;
            };
            let slug = github_slug(heading);
            let n = seen.entry(slug.clone()).or_insert(0);
            out.insert(if *n == 0 {
                slug.clone()
            } else {
                format!("{slug}-{n}")
            });
            *n += 1;
        }
        out
    }

    /// Each shell command of the page: the lines of its non-`properties` blocks (continuation
    /// lines joined) and its code spans.
    pub fn commands(&self) -> Vec<(usize, Vec<String>)> {
        let mut out = Vec::new();
        for fence in &self.fences {
            if fence.lang == "properties" {
                continue;
            }
            let mut joined = String::new();
            let mut first = fence.line + 1;
            for (i, line) in fence.body.lines().enumerate() {
                if joined.is_empty() {
                    first = fence.line + 1 + i;
                }
                match line.strip_suffix('\\') {
                    Some(head) => joined.push_str(head),
                    None => {
                        joined.push_str(line);
                        for words in shell_words(&joined) {
                            out.push((first, words));
                        }
                        joined.clear();
                    }
                }
            }
        }
        for (line, span) in self.code_spans() {
            for words in shell_words(&span) {
                out.push((line, words));
            }
        }
        out
    }
}

/// Every page checked: the README and `docs/*.md`.
pub fn pages() -> Vec<Doc> {
    let mut names: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    names.sort();
    names.insert(0, "README.md".into());
    names.iter().map(|n| Doc::read(n)).collect()
}

pub fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

/// Code spans as CommonMark reads them: a run of n backticks up to the next run of exactly n.
/// Returns (start, end) byte offsets of the whole span and its content.
pub fn code_spans(text: &str) -> Vec<(usize, usize, String)> {
    let b = text.as_bytes();
    let run = |from: usize| b[from..].iter().take_while(|&&c| c == b'`').count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run(i);
        let open_end = i + n;
        let mut j = open_end;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = run(j);
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(c) => {
                let content = text[open_end..c].replace('\n', " ").replace("\\|", "|");
                out.push((i, c + n, content.trim().to_string()));
                i = c + n;
            }
            None => i = open_end,
        }
    }
    out
}

/// GitHub's heading anchor: the text as rendered (code marks and link targets dropped),
/// lower-cased, every character but letters, digits, `-`, `_` and spaces removed, spaces as `-`.
pub fn github_slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading.trim();
    while let Some(i) = rest.find("](") {
        let end = rest[i..].find(')').map(|e| i + e + 1).unwrap_or(rest.len());
        text.push_str(&rest[..i]);
        rest = &rest[end..];
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// `docs/../README.md` as `README.md`.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}
