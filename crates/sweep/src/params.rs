//! Sweep parameters (`--param`, `#@ param`), the `{EXPR}` placeholders and
//! the parameterised trace with its `#@` metadata (module docs of `sweep`).

use std::collections::BTreeMap;
use std::fmt;

/// Points a sweep may have (a typo such as `1..1000000000` is refused).
const MAX_POINTS: usize = 1_000_000;

/// Values all parameters of a sweep may have together: each may have up to
/// [`MAX_POINTS`], but twenty such lines would hold 20 M values (about a
/// gigabyte) before their product is refused.
pub const MAX_VALUES: usize = 2 * MAX_POINTS;

// ------------------------------------------------------------ parameters

/// A parameter value: an integer, or a word substituted as is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A number.
    Int(u64),
    /// A word (no arithmetic).
    Text(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Text(t) => f.write_str(t),
        }
    }
}

/// A parameter and its values in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its name (an identifier).
    pub name: String,
    /// Its values.
    pub values: Vec<Value>,
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// An integer: decimal or `0x` hex, `_` separators, optional `Ki`/`Mi`/`Gi`.
fn parse_int(s: &str) -> Option<u64> {
    int_of(s).ok()
}

/// [`parse_int`] with the reason when `s` is none: not a number, or a
/// number beyond 64 bits (the message says the range).
fn int_of(s: &str) -> Result<u64, String> {
    let not_a_number = || format!("`{s}` is not a number");
    let (body, mult) = if let Some(b) = s.strip_suffix("Ki") {
        (b, 1u64 << 10)
    } else if let Some(b) = s.strip_suffix("Mi") {
        (b, 1 << 20)
    } else if let Some(b) = s.strip_suffix("Gi") {
        (b, 1 << 30)
    } else {
        (s, 1)
    };
    let body = body.replace('_', "");
    if !body.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(not_a_number());
    }
    let (digits, radix) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (body.as_str(), 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(not_a_number());
    }
    u64::from_str_radix(digits, radix)
        .ok()
        .and_then(|v| v.checked_mul(mult))
        .ok_or_else(|| {
            format!(
                "`{s}` is too large: a value is at most {} ({:#x})",
                u64::MAX,
                u64::MAX
            )
        })
}

/// Parses `NAME=ITEMS` (module docs).
pub fn parse_param(spec: &str) -> Result<Param, String> {
    parse_param_max(spec, MAX_POINTS)
}

/// [`parse_param`] with at most `max` values.
fn parse_param_max(spec: &str, max: usize) -> Result<Param, String> {
    let (name, items) = spec
        .split_once('=')
        .ok_or("expected NAME=VALUES, e.g. bytes=128..65536*2")?;
    let name = name.trim();
    if !is_ident(name) {
        return Err(format!(
            "`{name}` is not a parameter name (letters, digits, _)"
        ));
    }
    // A parameter's column sits beside the result columns: the same name
    // twice in the header, and a CSV reader keeps only one of them.
    if crate::csv::COLUMNS_BESIDE_PARAMETERS.contains(&name) {
        return Err(format!(
            "parameter `{name}` is named like a column of the sweep CSV ({}): give it another name",
            crate::csv::COLUMNS_BESIDE_PARAMETERS.join(", ")
        ));
    }
    let mut values = Vec::new();
    for item in items.split(',') {
        parse_item(item.trim(), &mut values, max)?;
        if values.len() > max {
            return Err(format!("more than {max} values"));
        }
    }
    Ok(Param {
        name: name.to_string(),
        values,
    })
}

fn parse_item(item: &str, out: &mut Vec<Value>, max: usize) -> Result<(), String> {
    if item.is_empty() {
        return Err("empty value".into());
    }
    let Some((a, rest)) = item.split_once("..") else {
        if item.starts_with(|c: char| c.is_ascii_digit()) {
            out.push(Value::Int(int_of(item).map_err(|e| {
                if e.contains("too large") {
                    e
                } else {
                    format!("`{item}` is neither a number nor a word")
                }
            })?));
        } else if item
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.:/".contains(c))
            && !item.starts_with(|c: char| c.is_ascii_digit())
        {
            out.push(Value::Text(item.to_string()));
        } else {
            return Err(format!("`{item}` is neither a number nor a word"));
        }
        return Ok(());
    };
    let start = int_of(a).map_err(|e| format!("{e} (in `{item}`)"))?;
    let (end, step) = match rest.find(['*', '+']) {
        Some(i) => (&rest[..i], Some((&rest[i..i + 1], &rest[i + 1..]))),
        None => (rest, None),
    };
    let end = int_of(end).map_err(|e| format!("{e} (in `{item}`)"))?;
    if end < start {
        return Err(format!("`{item}`: the range ends before it starts"));
    }
    let bad_step = || format!("`{item}`: bad step (A..B*F with F ≥ 2, A..B+S with S ≥ 1)");
    let (geometric, by) = match step {
        None => (false, 1),
        Some((op, s)) => (op == "*", parse_int(s).ok_or_else(bad_step)?),
    };
    if (geometric && (by < 2 || start == 0)) || by == 0 {
        return Err(bad_step());
    }
    let mut v = start;
    loop {
        out.push(Value::Int(v));
        if out.len() > max {
            return Err(format!("`{item}` has more than {max} values"));
        }
        let next = if geometric {
            v.checked_mul(by)
        } else {
            v.checked_add(by)
        };
        match next {
            Some(n) if n <= end => v = n,
            _ => break,
        }
    }
    Ok(())
}

/// The cartesian product, first parameter slowest; point k is entry k.
pub fn points(params: &[Param]) -> Result<Vec<Vec<Value>>, String> {
    let mut total = 1usize;
    for p in params {
        total = total
            .checked_mul(p.values.len())
            .filter(|&t| t <= MAX_POINTS)
            .ok_or_else(|| format!("more than {MAX_POINTS} points"))?;
    }
    let mut out = Vec::with_capacity(total);
    for k in 0..total {
        let mut rest = k;
        let mut point = vec![Value::Int(0); params.len()];
        for (i, p) in params.iter().enumerate().rev() {
            let n = p.values.len();
            point[i] = p.values[rest % n].clone();
            rest /= n;
        }
        out.push(point);
    }
    Ok(out)
}

// ---------------------------------------------------------- substitution

/// Replaces every `{EXPR}` / `{EXPR:x}` in `template` (module docs).
/// Errors name the line and column.
pub fn substitute(template: &str, vars: &BTreeMap<String, Value>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    for (n, line) in template.split_inclusive('\n').enumerate() {
        let mut chars = line.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().is_some_and(|&(_, d)| d == '{') => {
                    chars.next();
                    out.push('{');
                }
                '}' if chars.peek().is_some_and(|&(_, d)| d == '}') => {
                    chars.next();
                    out.push('}');
                }
                '{' => {
                    let at = |msg: String| {
                        format!(
                            "line {}, column {}: {msg}",
                            n + 1,
                            line[..i].chars().count() + 1
                        )
                    };
                    let body_start = i + 1;
                    let Some(len) = line[body_start..].find('}') else {
                        return Err(at(
                            "`{` without a closing `}` on the line (write `{{` for a brace)".into(),
                        ));
                    };
                    let body = &line[body_start..body_start + len];
                    while chars.peek().is_some_and(|&(j, _)| j <= body_start + len) {
                        chars.next();
                    }
                    let (expr, hex) = match body.rsplit_once(':') {
                        Some((e, "x")) => (e, true),
                        Some((_, f)) => {
                            return Err(at(format!("unknown format `:{f}` (only `:x`)")));
                        }
                        None => (body, false),
                    };
                    let v = eval(expr, vars)
                        .map_err(|e| at(format!("`{{{}`: {e}", shown_body(body))))?;
                    match (v, hex) {
                        (Value::Int(v), true) => out.push_str(&format!("{v:#x}")),
                        (Value::Int(v), false) => out.push_str(&v.to_string()),
                        (Value::Text(t), false) => out.push_str(&t),
                        (Value::Text(_), true) => {
                            return Err(at(format!(
                                "`{{{}`: a word has no hex form",
                                shown_body(body)
                            )));
                        }
                    }
                }
                _ => out.push(c),
            }
        }
    }
    Ok(out)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(u64),
    Name(String),
    Op(char),
}

fn tokens(expr: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let b = expr.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if "+-*/%()".contains(c) {
            out.push(Tok::Op(c));
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let w = &expr[s..i];
            if w.starts_with(|ch: char| ch.is_ascii_digit()) {
                out.push(Tok::Num(int_of(w)?));
            } else {
                out.push(Tok::Name(w.to_string()));
            }
        } else {
            return Err(format!("unexpected `{c}`"));
        }
    }
    Ok(out)
}

/// Parentheses a placeholder may nest: the evaluator recurses once per
/// level, and 30,000 levels overflowed the main thread's stack.
const MAX_NESTING: usize = 64;

/// Characters of a placeholder a message shows: a long one (a generated
/// trace's) is cut, so that the message stays one readable line.
const SHOWN_BODY_CHARS: usize = 32;

/// `body}` of a placeholder for a message, cut to [`SHOWN_BODY_CHARS`]
/// characters and `…` when longer.
fn shown_body(body: &str) -> String {
    if body.chars().count() <= SHOWN_BODY_CHARS {
        format!("{body}}}")
    } else {
        let head: String = body.chars().take(SHOWN_BODY_CHARS - 1).collect();
        format!("{head}…")
    }
}

/// Evaluates a placeholder expression.
fn eval(expr: &str, vars: &BTreeMap<String, Value>) -> Result<Value, String> {
    let toks = tokens(expr)?;
    if let [Tok::Name(n)] = toks.as_slice() {
        return vars.get(n).cloned().ok_or_else(|| unknown(n, vars));
    }
    let mut p = Parser {
        toks,
        i: 0,
        depth: 0,
        vars,
    };
    let v = p.expr()?;
    if p.i != p.toks.len() {
        return Err("unexpected text after the expression".into());
    }
    Ok(Value::Int(v))
}

fn unknown(n: &str, vars: &BTreeMap<String, Value>) -> String {
    let names: Vec<&str> = vars.keys().map(String::as_str).collect();
    format!("unknown parameter `{n}` (parameters: {})", names.join(", "))
}

struct Parser<'a> {
    toks: Vec<Tok>,
    i: usize,
    /// Parentheses open around the token at `i`.
    depth: usize,
    vars: &'a BTreeMap<String, Value>,
}

impl Parser<'_> {
    fn peek_op(&self) -> Option<char> {
        match self.toks.get(self.i) {
            Some(Tok::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn expr(&mut self) -> Result<u64, String> {
        let mut v = self.term()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.i += 1;
            let r = self.term()?;
            v = if op == '+' {
                v.checked_add(r).ok_or("overflow")?
            } else {
                v.checked_sub(r).ok_or("result below zero")?
            };
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<u64, String> {
        let mut v = self.factor()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek_op() {
            self.i += 1;
            let r = self.factor()?;
            v = match op {
                '*' => v.checked_mul(r).ok_or("overflow")?,
                '/' => v.checked_div(r).ok_or("division by zero")?,
                _ => v.checked_rem(r).ok_or("division by zero")?,
            };
        }
        Ok(v)
    }

    fn factor(&mut self) -> Result<u64, String> {
        let t = self.toks.get(self.i).cloned();
        self.i += 1;
        match t {
            Some(Tok::Num(v)) => Ok(v),
            Some(Tok::Name(n)) => match self.vars.get(&n) {
                Some(Value::Int(v)) => Ok(*v),
                Some(Value::Text(t)) => Err(format!("`{n}` = `{t}` is a word, not a number")),
                None => Err(unknown(&n, self.vars)),
            },
            Some(Tok::Op('(')) => {
                if self.depth == MAX_NESTING {
                    return Err(format!("parentheses nested more than {MAX_NESTING} deep"));
                }
                self.depth += 1;
                let v = self.expr()?;
                self.depth -= 1;
                if self.peek_op() != Some(')') {
                    return Err("missing `)`".into());
                }
                self.i += 1;
                Ok(v)
            }
            Some(Tok::Op(c)) => Err(format!("unexpected `{c}`")),
            None => Err("expression ends early".into()),
        }
    }
}

// -------------------------------------------------------------- the trace

/// Published figures overlaid on the plot (docs/references/figures.md §0, §A).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Published {
    /// The set whose peak is nearest the sweep's highest bandwidth.
    #[default]
    Auto,
    /// One DMA engine: 23 B/ns; 32 KiB in 1416 ns.
    Engine,
    /// One NeuronCore's 16 engines: 368 GB/s.
    Core,
    /// The chip's HBM: 2.9 TB/s.
    Chip,
    /// Nothing but the bytes-per-partition guidance lines.
    None,
}

impl Published {
    /// Every set, in the order the help lists them.
    pub const ALL: [Published; 5] = [
        Published::Auto,
        Published::Engine,
        Published::Core,
        Published::Chip,
        Published::None,
    ];

    /// One line on what the set overlays (the CLI's help).
    pub fn help(self) -> &'static str {
        match self {
            Published::Auto => "The set whose peak is nearest the sweep's highest bandwidth",
            Published::Engine => "One DMA engine: 23 B/ns; 32 KiB in 1416 ns",
            Published::Core => "One NeuronCore's 16 engines: 368 GB/s",
            Published::Chip => "The chip's HBM: 2.9 TB/s",
            Published::None => "Nothing but the bytes-per-partition guidance lines",
        }
    }

    /// The set's name in `--published`, `#@ published` and shard headers.
    pub fn name(self) -> &'static str {
        match self {
            Published::Auto => "auto",
            Published::Engine => "engine",
            Published::Core => "core",
            Published::Chip => "chip",
            Published::None => "none",
        }
    }

    /// The set named `s`.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// A parameterised trace and its `#@` metadata lines (comments to the
/// trace language): `#@ param NAME=ITEMS`, `#@ payload EXPR-in-braces`
/// (bytes that count for GB/s; default: every byte the engines wrote),
/// `#@ x NAME`, `#@ published SET`.
#[derive(Clone, Debug)]
pub struct Template {
    /// The trace text.
    pub text: String,
    /// Default parameters.
    pub params: Vec<Param>,
    /// Default x axis.
    pub x: Option<String>,
    /// Default overlay.
    pub published: Option<Published>,
    /// The parameter that is bytes per partition (`#@ partition-bytes NAME`).
    pub partition_bytes: Option<String>,
}

impl Template {
    /// Whether a `{EXPR}` placeholder of the trace names `name` (as a
    /// whole identifier): a `--param` for a name nothing uses is a typo.
    pub fn uses(&self, name: &str) -> bool {
        let mut rest = self.text.as_str();
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else { break };
            let expr = &after[..close];
            if expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == name)
            {
                return true;
            }
            rest = &after[close + 1..];
        }
        false
    }

    /// Reads the metadata lines.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut t = Template {
            text: text.to_string(),
            params: Vec::new(),
            x: None,
            published: None,
            partition_bytes: None,
        };
        for (n, line) in text.lines().enumerate() {
            let Some(rest) = line.trim_start().strip_prefix("#@") else {
                continue;
            };
            let at = |m: String| format!("line {}: {m}", n + 1);
            let rest = rest.trim();
            let (key, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let arg = arg.trim();
            match key {
                "param" => {
                    let total: usize = t.params.iter().map(|p| p.values.len()).sum();
                    let room = MAX_VALUES.saturating_sub(total);
                    let p = parse_param_max(arg, room.min(MAX_POINTS)).map_err(|e| {
                        if room < MAX_POINTS && e.contains("more than") {
                            at(format!(
                                "the `#@ param` lines have more than {MAX_VALUES} values in all"
                            ))
                        } else {
                            at(e)
                        }
                    })?;
                    if t.params.iter().any(|q| q.name == p.name) {
                        return Err(at(format!("parameter `{}` given twice", p.name)));
                    }
                    t.params.push(p);
                }
                "payload" => {}
                "x" if is_ident(arg) => t.x = Some(arg.to_string()),
                "partition-bytes" if is_ident(arg) => t.partition_bytes = Some(arg.to_string()),
                "published" => {
                    t.published = Some(Published::from_name(arg).ok_or_else(|| {
                        at(format!(
                            "`#@ published {arg}`: expected auto, engine, core, chip or none"
                        ))
                    })?);
                }
                _ => {
                    return Err(at(format!(
                        "unknown sweep metadata `#@ {rest}` (param, payload, x, published, partition-bytes)"
                    )));
                }
            }
        }
        Ok(t)
    }
}

/// `#@ payload N` of a substituted trace.
pub fn payload_of(text: &str) -> Result<Option<u64>, String> {
    for line in text.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("#@")
            && let Some(v) = rest.trim().strip_prefix("payload")
        {
            let v = v.trim();
            return parse_int(v)
                .map(Some)
                .ok_or_else(|| format!("`#@ payload {v}` is not a number of bytes"));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(p: &Param) -> Vec<u64> {
        p.values
            .iter()
            .map(|v| match v {
                Value::Int(i) => *i,
                Value::Text(_) => panic!("text"),
            })
            .collect()
    }

    #[test]
    fn params_lists_and_ranges() {
        let p = parse_param("bytes=128..65536*2").unwrap();
        assert_eq!(p.name, "bytes");
        assert_eq!(
            ints(&p),
            vec![128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
        );
        assert_eq!(ints(&parse_param("n=1..10+4").unwrap()), vec![1, 5, 9]);
        assert_eq!(ints(&parse_param("n=3..5").unwrap()), vec![3, 4, 5]);
        assert_eq!(
            ints(&parse_param("n=0x10,4Ki,1_000").unwrap()),
            vec![16, 4096, 1000]
        );
        assert_eq!(
            ints(&parse_param("n=1,100..400*2,7").unwrap()),
            vec![1, 100, 200, 400, 7]
        );
        let t = parse_param("dtype=bf16,fp32").unwrap();
        assert_eq!(
            t.values,
            vec![Value::Text("bf16".into()), Value::Text("fp32".into())]
        );
        for bad in [
            "bytes", "1x=2", "n=", "n=5..1", "n=1..9*1", "n=0..9*2", "n=1..9+0", "n=1..x", "n=a b",
        ] {
            assert!(parse_param(bad).is_err(), "{bad}");
        }
        assert!(parse_param("n=1..100000000").is_err());
    }

    #[test]
    fn many_long_parameter_lists_are_refused_before_they_fill_memory() {
        // 20 lines of 1 M values took 7.7 s and 946 MB before the product
        // of their lengths was refused.
        let started = std::time::Instant::now();
        let text = "#@ param a=0..999999\n#@ param b=0..999999\n#@ param c=0..1\nrun\n";
        let e = Template::parse(text).unwrap_err();
        assert_eq!(
            e,
            "line 3: the `#@ param` lines have more than 2000000 values in all"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert!(Template::parse("#@ param a=0..999999\n#@ param c=0..1\n").is_ok());
    }

    #[test]
    fn numbers_beyond_64_bits_are_too_large_not_words() {
        let too_large =
            "is too large: a value is at most 18446744073709551615 (0xffffffffffffffff)";
        for (spec, what) in [
            ("n=18446744073709551616", "`18446744073709551616`"),
            ("n=0x1_0000_0000_0000_0000", "`0x1_0000_0000_0000_0000`"),
            ("n=17179869184Gi", "`17179869184Gi`"),
            ("n=1..18446744073709551616", "`18446744073709551616`"),
        ] {
            let e = parse_param(spec).unwrap_err();
            assert!(e.starts_with(&format!("{what} {too_large}")), "{spec}: {e}");
        }
        assert_eq!(
            ints(&parse_param("n=18446744073709551615").unwrap()),
            vec![u64::MAX]
        );
        let e = parse_param("n=12ab").unwrap_err();
        assert_eq!(e, "`12ab` is neither a number nor a word");
        let vars = BTreeMap::new();
        let e = substitute("{99999999999999999999}", &vars).unwrap_err();
        assert!(e.contains(too_large), "{e}");
    }

    #[test]
    fn cartesian_product_first_parameter_slowest() {
        let a = parse_param("a=1,2").unwrap();
        let b = parse_param("b=10,20,30").unwrap();
        let pts = points(&[a, b]).unwrap();
        let flat: Vec<String> = pts
            .iter()
            .map(|p| {
                p.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        assert_eq!(flat, ["1/10", "1/20", "1/30", "2/10", "2/20", "2/30"]);
        assert_eq!(points(&[]).unwrap(), vec![Vec::<Value>::new()]);
    }

    #[test]
    fn substitution_and_expressions() {
        let vars: BTreeMap<String, Value> = [
            ("bytes".to_string(), Value::Int(4096)),
            ("dt".to_string(), Value::Text("BFLOAT16".into())),
        ]
        .into_iter()
        .collect();
        let s = substitute(
            "len={bytes} half={bytes/2} n={ (bytes + 0x100) * 2 % 3000 } at={0x2000000000+bytes*128:x} {dt} {{x}}\n# }",
            &vars,
        )
        .unwrap();
        assert_eq!(
            s,
            "len=4096 half=2048 n=2704 at=0x2000080000 BFLOAT16 {x}\n# }"
        );
        let err = |t: &str| substitute(t, &vars).unwrap_err();
        assert!(
            err("a\nb {nope}").starts_with("line 2, column 3: `{nope}`: unknown parameter `nope`"),
            "{}",
            err("a\nb {nope}")
        );
        assert!(err("{bytes/0}").contains("division by zero"));
        assert!(err("{bytes-5000}").contains("below zero"));
        assert!(err("{dt*2}").contains("is a word"));
        assert!(err("{dt:x}").contains("no hex form"));
        assert!(err("{bytes:q}").contains("unknown format"));
        assert!(err("x {bytes").contains("without a closing"));
        assert!(err("{(bytes}").contains("missing `)`"));
        assert!(err("{bytes bytes}").contains("after the expression"));
    }

    /// A placeholder nested 30,000 parentheses deep overflowed the stack
    /// (SIGABRT, exit 134; probe report sweep-etc.md finding 7): the
    /// nesting is bounded and the error names the line, the column and
    /// the depth, without echoing the whole expression.
    #[test]
    fn deeply_nested_parentheses_are_an_error_not_a_stack_overflow() {
        let vars: BTreeMap<String, Value> =
            [("n".to_string(), Value::Int(1))].into_iter().collect();
        let depth = 30_000;
        let deep = format!("x\nbyte={{{}n{}}}\n", "(".repeat(depth), ")".repeat(depth));
        // On a thread with a small stack, as a worker's would be.
        let e = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || substitute(&deep, &vars).unwrap_err())
            .unwrap()
            .join()
            .unwrap();
        assert!(
            e.starts_with(&format!(
                "line 2, column 6: `{{{}…`: parentheses nested more than 64 deep",
                "(".repeat(31)
            )),
            "{e}"
        );
        assert!(e.len() < 200, "{e}");
        // 64 levels are fine.
        let vars: BTreeMap<String, Value> =
            [("n".to_string(), Value::Int(1))].into_iter().collect();
        let ok = format!("{{{}n+1{}}}", "(".repeat(64), ")".repeat(64));
        assert_eq!(substitute(&ok, &vars).unwrap(), "2");
    }

    #[test]
    fn template_metadata() {
        let t = Template::parse(
            "#@ param bytes=128..512*2\n#@ x bytes\n#@ published core\n#@ payload {bytes*2}\nrun\n",
        )
        .unwrap();
        assert_eq!(t.params.len(), 1);
        assert_eq!(t.x.as_deref(), Some("bytes"));
        assert_eq!(t.published, Some(Published::Core));
        assert_eq!(t.partition_bytes, None);
        let t = Template::parse("#@ partition-bytes bytes\n").unwrap();
        assert_eq!(t.partition_bytes.as_deref(), Some("bytes"));
        assert!(Template::parse("#@ partition-bytes 4k\n").is_err());
        assert!(Template::parse("#@ nonsense\n").is_err());
        assert!(Template::parse("#@ published lots\n").is_err());
        assert_eq!(payload_of("#@ payload 1024\nrun\n").unwrap(), Some(1024));
        assert_eq!(payload_of("run\n").unwrap(), None);
        assert!(payload_of("#@ payload {x}\n").is_err());
    }
}
