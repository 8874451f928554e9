//! Just enough shell for the checks: the words of a command line, the settings it makes and
//! the arguments it gives the `strata` binary.

/// The words of each simple command in a line of shell: quotes removed, a variable or `$(...)`
/// read as `2` (a value every documented use takes), commands separated at `;`, `&`, `|`, and
/// a `$(...)`'s command returned too; stops at a comment or a redirection.
pub fn shell_words(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut quote: Option<char> = None;
    let flush = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (_, '$') => {
                in_word = true;
                word.push('2');
                match chars.get(i + 1) {
                    Some('(') => {
                        let mut depth = 0;
                        let start = i + 2;
                        let mut j = i + 1;
                        while j < chars.len() {
                            match chars[j] {
                                '(' => depth += 1,
                                ')' => {
                                    depth -= 1;
                                    if depth == 0 {
                                        break;
                                    }
                                }
                                _ => {}
                            }
                            j += 1;
                        }
                        let inner: String = chars[start..j.min(chars.len())].iter().collect();
                        commands.extend(shell_words(&inner));
                        i = j;
                    }
                    Some('{') => {
                        while i < chars.len() && chars[i] != '}' {
                            i += 1;
                        }
                    }
                    _ => {
                        while chars
                            .get(i + 1)
                            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
                        {
                            i += 1;
                        }
                    }
                }
            }
            (Some(_), c) => word.push(c),
            (None, c) if c.is_whitespace() => flush(&mut words, &mut word, &mut in_word),
            (None, '#') if !in_word => break,
            (None, '>' | '<') => break,
            (None, ';' | '&' | '|') => {
                flush(&mut words, &mut word, &mut in_word);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            (None, c) => {
                in_word = true;
                word.push(c);
            }
        }
        i += 1;
    }
    flush(&mut words, &mut word, &mut in_word);
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

/// The `key=value` settings a command makes with `--override` and `--add-config`.
pub fn settings(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for pair in words.windows(2) {
        match pair[0].as_str() {
            "--override" => out.push(pair[1].clone()),
            "--add-config" => {
                // Split at commas outside brackets (`SCRAM-SHA-512=[iterations=8192,password=x]`).
                let mut depth = 0;
                let mut item = String::new();
                for c in pair[1].chars() {
                    match c {
                        '[' => depth += 1,
                        ']' => depth -= 1,
                        ',' if depth == 0 => {
                            out.push(std::mem::take(&mut item));
                            continue;
                        }
                        _ => {}
                    }
                    item.push(c);
                }
                out.push(item);
            }
            _ => {}
        }
    }
    out
}

/// The arguments of the `strata` binary in a command, if it runs it (`strata ...` or
/// `cargo run [...] -- ...`).
pub fn strata_args(words: &[String]) -> Option<Vec<String>> {
    let words: Vec<&String> = words
        .iter()
        .skip_while(|w| w.contains('=') && w.starts_with(|c: char| c.is_ascii_uppercase()))
        .collect();
    match words.first().map(|w| w.as_str()) {
        Some("strata") => Some(words[1..].iter().map(|w| w.to_string()).collect()),
        Some("cargo") if words.get(1).is_some_and(|w| *w == "run") => {
            let cargo_args: Vec<&&String> = words.iter().take_while(|w| **w != "--").collect();
            let other_target = cargo_args.windows(2).any(|p| {
                p[0].as_str() == "--example"
                    || (p[0].as_str() == "--bin" && p[1].as_str() != "strata")
            });
            if other_target {
                return None;
            }
            Some(
                words
                    .iter()
                    .skip_while(|w| **w != "--")
                    .skip(1)
                    .map(|w| w.to_string())
                    .collect(),
            )
        }
        _ => None,
    }
}
