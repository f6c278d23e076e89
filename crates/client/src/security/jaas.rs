//! `sasl.jaas.config`: `ModuleClassName Flag (key=value)* ;`, read the way Kafka's
//! `JaasConfig` reads it with a `java.io.StreamTokenizer`.
//!
//! Tokens: whitespace is every character up to and including space; `;` and `=` stand alone;
//! `"` and `'` quote, with Java's backslash escapes (`\n`, `\t`, `\b`, `\f`, `\r`, `\a`, `\v`,
//! octal `\0`..`\377`, and `\` before anything else for that character); `//` and `/* */`
//! are comments, and so is a lone `/` up to the end of its line (so a bare value stops at
//! `/`: quote URLs). Every other character up to U+0080, from U+00A0 on, is part of a word.
//!
//! Two choices stricter than Java's: a quote that ends at a line break or the end of the text
//! is refused (Java silently closes it), and so is any second login module (Kafka refuses it
//! later, when it counts the modules).

use std::fmt;

/// One login module line.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct JaasLogin {
    /// The login module's class name, e.g. `org.apache.kafka.common.security.plain.PlainLoginModule`.
    pub(crate) module: String,
    /// The control flag in lower case: `required`, `requisite`, `sufficient` or `optional`.
    pub(crate) flag: String,
    /// Options in the order written; a later repeat of a key wins in [`JaasLogin::option`].
    pub(crate) options: Vec<(String, String)>,
}

impl JaasLogin {
    /// The value of option `key`: the last one given, as Kafka's map keeps it.
    pub(crate) fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Shows the module, the flag and the option keys; values are passwords as often as not.
impl fmt::Debug for JaasLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Redacted<'a>(&'a [(String, String)]);
        impl fmt::Debug for Redacted<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map()
                    .entries(self.0.iter().map(|(k, _)| (k, format_args!("[redacted]"))))
                    .finish()
            }
        }
        f.debug_struct("JaasLogin")
            .field("module", &self.module)
            .field("flag", &self.flag)
            .field("options", &Redacted(&self.options))
            .finish()
    }
}

/// What the parser wanted where it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    /// The login module's class name.
    Module,
    /// `required`, `requisite`, `sufficient` or `optional`.
    Flag,
    /// An option name, or the closing `;`.
    OptionOrEnd,
    /// `=` after an option name.
    Equals,
    /// An option value (a word or a quoted string).
    Value,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expected::Module => "a login module class name",
            Expected::Flag => "a control flag (required, requisite, sufficient or optional)",
            Expected::OptionOrEnd => "an option name or the closing `;`",
            Expected::Equals => "`=` after the option name",
            Expected::Value => "an option value",
        })
    }
}

/// Why a `sasl.jaas.config` was refused: where, and what was expected. Never quotes a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JaasFault {
    /// Nothing but whitespace and comments.
    #[error("sasl.jaas.config is empty: expected a login module")]
    Empty,
    /// Something else where `expected` should be (`position` is the text's length at its end).
    #[error("sasl.jaas.config: expected {expected} at byte {position}")]
    Expected {
        /// What should have been there.
        expected: Expected,
        /// Byte offset of what was there instead.
        position: usize,
    },
    /// A quoted string without its closing quote on the same line.
    #[error("sasl.jaas.config: quote opened at byte {position} is not closed on its line")]
    UnterminatedQuote {
        /// Byte offset of the opening quote.
        position: usize,
    },
    /// Text after the first module's `;`.
    #[error("sasl.jaas.config: a second login module at byte {position}; exactly one is allowed")]
    SecondModule {
        /// Byte offset of the second module.
        position: usize,
    },
}

/// A `StreamTokenizer` token.
#[derive(Debug, PartialEq, Eq)]
enum Token {
    /// A run of word characters.
    Word(String),
    /// A quoted string, quotes removed and escapes applied.
    Quoted(String),
    /// `;`, `=` or a character that is neither word, whitespace, quote nor comment.
    Ordinary(char),
}

impl Token {
    /// The text of a word or quoted string: what Java's tokenizer puts in `sval`.
    fn into_text(self) -> Option<String> {
        match self {
            Token::Word(text) | Token::Quoted(text) => Some(text),
            Token::Ordinary(_) => None,
        }
    }
}

struct Tokenizer<'a> {
    text: &'a str,
    at: usize,
}

fn is_whitespace(c: char) -> bool {
    c <= ' '
}

/// Word characters after Kafka's `wordChars(32, 128)` and `wordChars(160, 255)`, less the
/// characters it then makes whitespace, ordinary, quotes or comments; Java's tokenizer
/// counts everything from U+0100 on as a word character too.
fn is_word(c: char) -> bool {
    match c {
        '/' | ';' | '=' | '"' | '\'' => false,
        '\u{21}'..='\u{80}' | '\u{a0}'.. => true,
        _ => false,
    }
}

impl<'a> Tokenizer<'a> {
    fn new(text: &'a str) -> Tokenizer<'a> {
        Tokenizer { text, at: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    /// Skips to the next line break (not consuming it).
    fn skip_line(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' || c == '\r' {
                break;
            }
            self.bump();
        }
    }

    /// The next token and its byte offset, or `None` at the end.
    fn next_token(&mut self) -> Result<Option<(usize, Token)>, JaasFault> {
        loop {
            let start = self.at;
            let Some(c) = self.bump() else {
                return Ok(None);
            };
            if is_whitespace(c) {
                continue;
            }
            if is_word(c) {
                while self.peek().is_some_and(is_word) {
                    self.bump();
                }
                return Ok(Some((
                    start,
                    Token::Word(self.text[start..self.at].to_owned()),
                )));
            }
            if c == '"' || c == '\'' {
                return self
                    .quoted(c, start)
                    .map(|s| Some((start, Token::Quoted(s))));
            }
            if c == '/' {
                match self.bump() {
                    Some('*') => {
                        // An unclosed block comment runs to the end, as in Java.
                        match self.text[self.at..].find("*/") {
                            Some(end) => self.at += end + 2,
                            None => self.at = self.text.len(),
                        }
                    }
                    Some('/') => self.skip_line(),
                    // `/` is also Kafka's line-comment character. Java does not look at the
                    // character it has just read for the line break, and neither do we.
                    Some(_) => self.skip_line(),
                    None => {}
                }
                continue;
            }
            return Ok(Some((start, Token::Ordinary(c))));
        }
    }

    /// The rest of a string opened by `quote` at `start`.
    fn quoted(&mut self, quote: char, start: usize) -> Result<String, JaasFault> {
        let unterminated = JaasFault::UnterminatedQuote { position: start };
        let mut out = String::new();
        loop {
            let c = self.bump().ok_or(unterminated.clone())?;
            if c == quote {
                return Ok(out);
            }
            if c == '\n' || c == '\r' {
                return Err(unterminated);
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let escaped = self.bump().ok_or(unterminated.clone())?;
            let value = match escaped {
                'a' => '\u{7}',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'v' => '\u{b}',
                '0'..='7' => self.octal(escaped),
                other => other,
            };
            out.push(value);
        }
    }

    /// An octal escape after its first digit: up to three digits, the third only when the
    /// first is 0..=3 (so `\377` is the largest, as in Java).
    fn octal(&mut self, first: char) -> char {
        let digit = |c: Option<char>| c.and_then(|c| c.to_digit(8));
        let mut value = first.to_digit(8).unwrap_or(0);
        if let Some(d) = digit(self.peek()) {
            self.bump();
            value = value * 8 + d;
            if first <= '3' {
                if let Some(d) = digit(self.peek()) {
                    self.bump();
                    value = value * 8 + d;
                }
            }
        }
        char::from_u32(value).unwrap_or('\u{fffd}')
    }
}

/// Parses a `sasl.jaas.config` value holding exactly one login module.
pub(crate) fn parse(text: &str) -> Result<JaasLogin, JaasFault> {
    let mut tokens = Tokenizer::new(text);
    let end = text.len();
    let expected = |expected, position| JaasFault::Expected { expected, position };

    let (at, module) = tokens.next_token()?.ok_or(JaasFault::Empty)?;
    let module = module
        .into_text()
        .filter(|m| !m.is_empty())
        .ok_or(expected(Expected::Module, at))?;

    let (at, flag) = tokens.next_token()?.ok_or(expected(Expected::Flag, end))?;
    let flag = flag
        .into_text()
        .map(|f| f.to_ascii_lowercase())
        .filter(|f| {
            matches!(
                f.as_str(),
                "required" | "requisite" | "sufficient" | "optional"
            )
        })
        .ok_or(expected(Expected::Flag, at))?;

    let mut options = Vec::new();
    loop {
        let (at, token) = tokens
            .next_token()?
            .ok_or(expected(Expected::OptionOrEnd, end))?;
        if token == Token::Ordinary(';') {
            break;
        }
        let key = token
            .into_text()
            .ok_or(expected(Expected::OptionOrEnd, at))?;
        match tokens.next_token()? {
            Some((_, Token::Ordinary('='))) => {}
            Some((at, _)) => return Err(expected(Expected::Equals, at)),
            None => return Err(expected(Expected::Equals, end)),
        }
        let (at, value) = tokens.next_token()?.ok_or(expected(Expected::Value, end))?;
        let value = value.into_text().ok_or(expected(Expected::Value, at))?;
        options.push((key, value));
    }

    if let Some((at, _)) = tokens.next_token()? {
        return Err(JaasFault::SecondModule { position: at });
    }
    Ok(JaasLogin {
        module,
        flag,
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
    const SCRAM: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
    const OAUTH: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

    fn options(login: &JaasLogin) -> Vec<(&str, &str)> {
        login
            .options
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn confluent_cloud_plain_line_with_single_quotes() {
        let login = parse(
            "org.apache.kafka.common.security.plain.PlainLoginModule required \
             username='ABCDEFGH12345678' \
             password='cflt/Secret+With=Signs;And,Commas';",
        )
        .unwrap();
        assert_eq!(login.module, PLAIN);
        assert_eq!(login.flag, "required");
        assert_eq!(
            options(&login),
            [
                ("username", "ABCDEFGH12345678"),
                ("password", "cflt/Secret+With=Signs;And,Commas"),
            ]
        );
        assert_eq!(
            login.option("password"),
            Some("cflt/Secret+With=Signs;And,Commas")
        );
        assert_eq!(login.option("missing"), None);
    }

    #[test]
    fn kafka_docs_scram_line_with_double_quotes() {
        let login = parse(
            "org.apache.kafka.common.security.scram.ScramLoginModule required\n    \
             username=\"alice\"\n    password=\"alice-secret\";",
        )
        .unwrap();
        assert_eq!(login.module, SCRAM);
        assert_eq!(
            options(&login),
            [("username", "alice"), ("password", "alice-secret")]
        );
    }

    #[test]
    fn oauthbearer_unsecured_line() {
        let login = parse(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule Required \
             unsecuredLoginStringClaim_sub=\"alice\" unsecuredLoginLifetimeSeconds=3600 ;",
        )
        .unwrap();
        assert_eq!(login.module, OAUTH);
        assert_eq!(login.flag, "required");
        assert_eq!(login.option("unsecuredLoginStringClaim_sub"), Some("alice"));
        assert_eq!(login.option("unsecuredLoginLifetimeSeconds"), Some("3600"));
    }

    #[test]
    fn module_with_no_options() {
        let login = parse("com.example.Login optional;").unwrap();
        assert_eq!(login.flag, "optional");
        assert!(login.options.is_empty());
    }

    #[test]
    fn escapes_inside_quotes() {
        let login = parse(
            r#"M sufficient a="q\"uote" b='it\'s' c="back\\slash" d="t\tn\nz\q" e="\101\7\400";"#,
        )
        .unwrap();
        assert_eq!(
            options(&login),
            [
                ("a", "q\"uote"),
                ("b", "it's"),
                ("c", "back\\slash"),
                ("d", "t\tn\nzq"),
                ("e", "A\u{7}\u{20}0"),
            ]
        );
    }

    #[test]
    fn the_other_quote_needs_no_escape() {
        let login = parse(r#"M required a="it's" b='say "hi"' c="";"#).unwrap();
        assert_eq!(
            options(&login),
            [("a", "it's"), ("b", "say \"hi\""), ("c", "")]
        );
    }

    #[test]
    fn comments_are_skipped() {
        let login = parse(
            "// client login\nM /* flag next */ requisite\n user=bob // trailing\n pass='p' ;",
        )
        .unwrap();
        assert_eq!(login.flag, "requisite");
        assert_eq!(options(&login), [("user", "bob"), ("pass", "p")]);
    }

    #[test]
    fn a_bare_slash_starts_a_comment_as_in_java() {
        // Java reads `url=http:` and then a comment: the `;` is on the next line.
        let login = parse("M required url=http://host/path\n;").unwrap();
        assert_eq!(login.option("url"), Some("http:"));
        let login = parse("M required url=\"http://host/path\";").unwrap();
        assert_eq!(login.option("url"), Some("http://host/path"));
    }

    #[test]
    fn later_repeat_of_a_key_wins() {
        let login = parse("M required k=1 k=2;").unwrap();
        assert_eq!(login.option("k"), Some("2"));
        assert_eq!(login.options.len(), 2);
    }

    #[test]
    fn debug_shows_keys_not_values() {
        let login = parse("M required username='alice' password='hunter2';").unwrap();
        let text = format!("{login:?}");
        assert!(
            text.contains("password") && text.contains("[redacted]"),
            "{text}"
        );
        assert!(
            !text.contains("hunter2") && !text.contains("alice"),
            "{text}"
        );
    }

    #[test]
    fn missing_semicolon() {
        let text = "M required username='alice' password='hunter2'";
        assert_eq!(
            parse(text).unwrap_err(),
            JaasFault::Expected {
                expected: Expected::OptionOrEnd,
                position: text.len(),
            }
        );
    }

    #[test]
    fn unterminated_quote() {
        assert_eq!(
            parse("M required password='hunter2;").unwrap_err(),
            JaasFault::UnterminatedQuote { position: 20 }
        );
        assert_eq!(
            parse("M required password=\"hunter2\n\";").unwrap_err(),
            JaasFault::UnterminatedQuote { position: 20 }
        );
        assert_eq!(
            parse("M required password=\"hunter2\\").unwrap_err(),
            JaasFault::UnterminatedQuote { position: 20 }
        );
    }

    #[test]
    fn two_modules() {
        let text = "A required a=1; B optional b=2;";
        assert_eq!(
            parse(text).unwrap_err(),
            JaasFault::SecondModule { position: 16 }
        );
        assert_eq!(
            parse("A required;;").unwrap_err(),
            JaasFault::SecondModule { position: 11 }
        );
    }

    #[test]
    fn empty() {
        for text in ["", "   \n\t", "// only a comment", "/* block */"] {
            assert_eq!(parse(text).unwrap_err(), JaasFault::Empty, "{text:?}");
        }
    }

    #[test]
    fn garbage() {
        let cases = [
            ("M", Expected::Flag, 1),
            ("M mandatory;", Expected::Flag, 2),
            ("; required;", Expected::Module, 0),
            ("'' required;", Expected::Module, 0),
            ("M required =x;", Expected::OptionOrEnd, 11),
            ("M required key;", Expected::Equals, 14),
            ("M required key", Expected::Equals, 14),
            ("M required key=;", Expected::Value, 15),
            ("M required key=", Expected::Value, 15),
            ("M required key==v;", Expected::Value, 15),
            ("M required k\u{85}=v;", Expected::Equals, 12),
        ];
        for (text, expected, position) in cases {
            assert_eq!(
                parse(text).unwrap_err(),
                JaasFault::Expected { expected, position },
                "{text:?}"
            );
        }
    }

    #[test]
    fn faults_never_quote_values() {
        for text in [
            "M required password='hunter2",
            "M required password=hunter2 x",
            "M required password=hunter2",
            "M hunter2 password=x;",
        ] {
            let fault = parse(text).unwrap_err();
            assert!(!fault.to_string().contains("hunter2"), "{fault}");
        }
    }
}
