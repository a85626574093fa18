//! `neuron-sim sweep`: run a parameterised trace over a set of points and
//! write one CSV row per point plus an SVG plot of bandwidth versus size
//! with the published figures overlaid (docs/user-guide.md "Sweeps").
//!
//! - Parameters: `--param NAME=ITEMS`, ITEMS a comma list of values
//!   (`4096`, `0x1000`, `4Ki`, a word) and ranges `A..B*F` (geometric),
//!   `A..B+S` (arithmetic), `A..B` (step 1). Several `--param` give the
//!   cartesian product, the first parameter varying slowest; `#@ param`
//!   lines in the trace give defaults.
//! - Placeholders: `{EXPR}` in the trace text, EXPR integer arithmetic
//!   (`+ - * / %`, parentheses) over the parameters, `{EXPR:x}` in hex;
//!   `{{` and `}}` are literal braces.
//! - Each point runs on its own [`Device`]; `--jobs N` points run at once
//!   (the device model itself stays single-threaded). Rows come out in
//!   point order whatever the finish order, so the CSV is deterministic
//!   (except the `host_seconds` column; `--no-host-time` leaves it empty).
//! - `--shard I/N` runs the points k with k mod N = I into a partial CSV;
//!   `sweep merge` joins the parts into exactly the CSV and SVG of a
//!   single run.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Subcommand};
use soc::Device;
use soc_map::SocMap;

use crate::{Failure, Maps, bad_input};

/// Points a sweep may have (a typo such as `1..1000000000` is refused).
const MAX_POINTS: usize = 1_000_000;

// ------------------------------------------------------------------ CLI

/// `neuron-sim sweep`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct SweepArgs {
    #[command(subcommand)]
    cmd: Option<SweepCmd>,
    /// The parameterised trace: `{EXPR}` placeholders, `#@ param` defaults.
    #[arg(required = true)]
    trace: Option<PathBuf>,
    /// NAME=ITEMS: values `V1,V2,…` and ranges `A..B*F` (geometric),
    /// `A..B+S` (arithmetic); repeat for the cartesian product.
    #[arg(long = "param", value_name = "NAME=ITEMS")]
    params: Vec<String>,
    /// Write the CSV to FILE (default: stdout).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the SVG plot of bandwidth versus the x parameter to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Points run at once (default: the host's available parallelism).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Run only the points k with k mod N = I (0 ≤ I < N) into a partial
    /// CSV for `sweep merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Timing-only mode for every point (no payload bytes; same cycles).
    #[arg(long)]
    timing_only: bool,
    /// Timing configuration (JSON, same keys as crates/sim-core/timing-default.json).
    #[arg(long, value_name = "FILE")]
    timing: Option<PathBuf>,
    /// Leave the host_seconds column empty (byte-reproducible files).
    #[arg(long)]
    no_host_time: bool,
    #[command(flatten)]
    plot: PlotArgs,
}

#[derive(Debug, Subcommand)]
enum SweepCmd {
    /// Join partial CSVs of `--shard` runs into the CSV (and SVG) of one run.
    Merge {
        /// The partial CSVs, in any order.
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        /// Write the CSV to FILE (default: stdout).
        #[arg(long, value_name = "FILE")]
        csv: Option<PathBuf>,
        /// Write the SVG plot to FILE.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        #[command(flatten)]
        plot: PlotArgs,
    },
}

/// What the plot shows.
#[derive(Debug, Default, Args)]
struct PlotArgs {
    /// The parameter on the (log) x axis (default: the trace's `#@ x`, else
    /// the first numeric parameter with several values).
    #[arg(long, value_name = "NAME")]
    x: Option<String>,
    /// Published figures to overlay: auto, engine, core, chip or none
    /// (default: the trace's `#@ published`, else auto).
    #[arg(long, value_name = "SET")]
    published: Option<Published>,
}

/// `neuron-sim sweep …`.
pub(crate) fn cmd_sweep(maps: &Maps, args: SweepArgs) -> Result<u8, Failure> {
    if let Some(SweepCmd::Merge {
        parts,
        csv,
        svg,
        plot,
    }) = args.cmd
    {
        return cmd_merge(&parts, csv.as_deref(), svg.as_deref(), &plot);
    }
    let Some(trace) = args.trace else {
        return Err(bad_input(
            "sweep needs a TRACE (or `sweep merge PART.csv…`)",
        ));
    };
    let text = std::fs::read_to_string(&trace)
        .map_err(|e| bad_input(format!("cannot read trace {}: {e}", trace.display())))?;
    let template =
        Template::parse(&text).map_err(|e| bad_input(format!("{}: {e}", trace.display())))?;
    let mut params = template.params.clone();
    for spec in &args.params {
        let p = parse_param(spec).map_err(|e| bad_input(format!("--param {spec}: {e}")))?;
        match params.iter_mut().find(|q| q.name == p.name) {
            Some(q) => *q = p,
            None => params.push(p),
        }
    }
    let shard = args
        .shard
        .as_deref()
        .map(parse_shard)
        .transpose()
        .map_err(|e| bad_input(format!("--shard: {e}")))?;
    let plan = Plan::new(&trace, &template, params)?;
    let factory = DeviceFactory::new(maps, args.timing.as_deref())?;
    let selected: Vec<usize> = (0..plan.points.len())
        .filter(|k| shard.is_none_or(|(i, n)| k % n == i))
        .collect();
    let jobs_list = selected
        .iter()
        .map(|&k| plan.job(k, args.timing_only))
        .collect::<Result<Vec<_>, _>>()?;
    let results = run_jobs(&factory, &jobs_list, args.jobs);
    let mut rows = Vec::new();
    let mut worst = 0u8;
    for (job, r) in jobs_list.iter().zip(results) {
        let m = r.map_err(|e| bad_input(format!("point {} ({}): {e}", job.point, job.label)))?;
        worst = worst.max(m.exit);
        rows.push(Row::new(job, &m, !args.no_host_time));
    }
    let x = args.plot.x.clone().or(template.x.clone());
    let published = args
        .plot
        .published
        .or(template.published)
        .unwrap_or_default();
    let meta = SweepMeta {
        points: plan.points.len(),
        x: x.clone(),
        published,
        trace: trace.display().to_string(),
    };
    let csv = render_csv(&plan.names, &rows, shard.map(|s| (s, &meta)));
    write_or_print(args.csv.as_deref(), &csv)?;
    if args.csv.is_some() {
        for r in &rows {
            outln!(
                "point {} {}: {} cycles, {} ns, {} bytes, {} GB/s, exit {}",
                r.point,
                r.label(&plan.names),
                r.cycles,
                r.ns,
                r.payload,
                r.gbps,
                r.exit
            );
        }
    }
    if let Some(svg) = args.svg.as_deref() {
        // Plot what the CSV says, parsed back: a merge draws the same.
        let parsed = Csv::parse(&csv).map_err(bad_input)?;
        let text = render_svg(&parsed, x.as_deref(), published, &meta.trace).map_err(bad_input)?;
        write_file(svg, &text)?;
    }
    Ok(worst)
}

fn cmd_merge(
    parts: &[PathBuf],
    csv_out: Option<&Path>,
    svg_out: Option<&Path>,
    plot: &PlotArgs,
) -> Result<u8, Failure> {
    let mut texts = Vec::new();
    for p in parts {
        let t = std::fs::read_to_string(p)
            .map_err(|e| bad_input(format!("cannot read {}: {e}", p.display())))?;
        texts.push((p.display().to_string(), t));
    }
    let (merged, meta) = merge(&texts).map_err(bad_input)?;
    write_or_print(csv_out, &merged)?;
    if let Some(svg) = svg_out {
        let parsed = Csv::parse(&merged).map_err(bad_input)?;
        let x = plot.x.clone().or(meta.x.clone());
        let published = plot.published.unwrap_or(meta.published);
        let text = render_svg(&parsed, x.as_deref(), published, &meta.trace).map_err(bad_input)?;
        write_file(svg, &text)?;
    }
    Ok(0)
}

fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text)
        .map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))
}

fn write_or_print(path: Option<&Path>, text: &str) -> Result<(), Failure> {
    match path {
        Some(p) => write_file(p, text),
        None => {
            out!("{text}");
            Ok(())
        }
    }
}

fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}`: expected I/N, e.g. 0/4"))?;
    let i: usize = i
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: I is not a number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: N is not a number"))?;
    if n == 0 || i >= n {
        return Err(format!("`{s}`: need 0 ≤ I < N"));
    }
    Ok((i, n))
}

// ------------------------------------------------------------ parameters

/// A parameter value: an integer, or a word substituted as is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
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
pub(crate) struct Param {
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
        return None;
    }
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else {
        body.parse::<u64>().ok()?
    };
    v.checked_mul(mult)
}

/// Parses `NAME=ITEMS` (module docs).
pub(crate) fn parse_param(spec: &str) -> Result<Param, String> {
    let (name, items) = spec
        .split_once('=')
        .ok_or("expected NAME=VALUES, e.g. bytes=128..65536*2")?;
    let name = name.trim();
    if !is_ident(name) {
        return Err(format!(
            "`{name}` is not a parameter name (letters, digits, _)"
        ));
    }
    let mut values = Vec::new();
    for item in items.split(',') {
        parse_item(item.trim(), &mut values)?;
        if values.len() > MAX_POINTS {
            return Err(format!("more than {MAX_POINTS} values"));
        }
    }
    Ok(Param {
        name: name.to_string(),
        values,
    })
}

fn parse_item(item: &str, out: &mut Vec<Value>) -> Result<(), String> {
    if item.is_empty() {
        return Err("empty value".into());
    }
    let Some((a, rest)) = item.split_once("..") else {
        if let Some(v) = parse_int(item) {
            out.push(Value::Int(v));
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
    let start = parse_int(a).ok_or_else(|| format!("`{a}` is not a number (in `{item}`)"))?;
    let (end, step) = match rest.find(['*', '+']) {
        Some(i) => (&rest[..i], Some((&rest[i..i + 1], &rest[i + 1..]))),
        None => (rest, None),
    };
    let end = parse_int(end).ok_or_else(|| format!("`{end}` is not a number (in `{item}`)"))?;
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
        if out.len() > MAX_POINTS {
            return Err(format!("`{item}` has more than {MAX_POINTS} values"));
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
pub(crate) fn points(params: &[Param]) -> Result<Vec<Vec<Value>>, String> {
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
pub(crate) fn substitute(template: &str, vars: &BTreeMap<String, Value>) -> Result<String, String> {
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
                    let v = eval(expr, vars).map_err(|e| at(format!("`{{{body}}}`: {e}")))?;
                    match (v, hex) {
                        (Value::Int(v), true) => out.push_str(&format!("{v:#x}")),
                        (Value::Int(v), false) => out.push_str(&v.to_string()),
                        (Value::Text(t), false) => out.push_str(&t),
                        (Value::Text(_), true) => {
                            return Err(at(format!("`{{{body}}}`: a word has no hex form")));
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
                out.push(Tok::Num(
                    parse_int(w).ok_or_else(|| format!("`{w}` is not a number"))?,
                ));
            } else {
                out.push(Tok::Name(w.to_string()));
            }
        } else {
            return Err(format!("unexpected `{c}`"));
        }
    }
    Ok(out)
}

/// Evaluates a placeholder expression.
fn eval(expr: &str, vars: &BTreeMap<String, Value>) -> Result<Value, String> {
    let toks = tokens(expr)?;
    if let [Tok::Name(n)] = toks.as_slice() {
        return vars.get(n).cloned().ok_or_else(|| unknown(n, vars));
    }
    let mut p = Parser { toks, i: 0, vars };
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
                let v = self.expr()?;
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

/// Published figures overlaid on the plot (hardware-and-simulators §0, §A).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Published {
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
    fn name(self) -> &'static str {
        match self {
            Published::Auto => "auto",
            Published::Engine => "engine",
            Published::Core => "core",
            Published::Chip => "chip",
            Published::None => "none",
        }
    }

    fn from_name(s: &str) -> Option<Self> {
        [
            Published::Auto,
            Published::Engine,
            Published::Core,
            Published::Chip,
            Published::None,
        ]
        .into_iter()
        .find(|p| p.name() == s)
    }
}

/// A parameterised trace and its `#@` metadata lines (comments to the
/// trace language): `#@ param NAME=ITEMS`, `#@ payload EXPR-in-braces`
/// (bytes that count for GB/s; default: every byte the engines wrote),
/// `#@ x NAME`, `#@ published SET`.
#[derive(Clone, Debug)]
pub(crate) struct Template {
    /// The trace text.
    pub text: String,
    /// Default parameters.
    pub params: Vec<Param>,
    /// Default x axis.
    pub x: Option<String>,
    /// Default overlay.
    pub published: Option<Published>,
}

impl Template {
    /// Reads the metadata lines.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut t = Template {
            text: text.to_string(),
            params: Vec::new(),
            x: None,
            published: None,
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
                    let p = parse_param(arg).map_err(at)?;
                    if t.params.iter().any(|q| q.name == p.name) {
                        return Err(at(format!("parameter `{}` given twice", p.name)));
                    }
                    t.params.push(p);
                }
                "payload" => {}
                "x" if is_ident(arg) => t.x = Some(arg.to_string()),
                "published" => {
                    t.published = Some(Published::from_name(arg).ok_or_else(|| {
                        at(format!(
                            "`#@ published {arg}`: expected auto, engine, core, chip or none"
                        ))
                    })?);
                }
                _ => {
                    return Err(at(format!(
                        "unknown sweep metadata `#@ {rest}` (param, payload, x, published)"
                    )));
                }
            }
        }
        Ok(t)
    }
}

/// `#@ payload N` of a substituted trace.
pub(crate) fn payload_of(text: &str) -> Result<Option<u64>, String> {
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

/// The points of one sweep.
struct Plan {
    names: Vec<String>,
    points: Vec<Vec<Value>>,
    template: String,
    file: String,
    base: PathBuf,
}

impl Plan {
    fn new(trace: &Path, template: &Template, params: Vec<Param>) -> Result<Self, Failure> {
        let points = points(&params).map_err(bad_input)?;
        Ok(Plan {
            names: params.into_iter().map(|p| p.name).collect(),
            points,
            template: template.text.clone(),
            file: trace.display().to_string(),
            base: trace.parent().map(Path::to_path_buf).unwrap_or_default(),
        })
    }

    /// The job of point `k`: the substituted trace.
    fn job(&self, k: usize, timing_only: bool) -> Result<Job, Failure> {
        let values = self.points.get(k).cloned().unwrap_or_default();
        let vars: BTreeMap<String, Value> = self
            .names
            .iter()
            .cloned()
            .zip(values.iter().cloned())
            .collect();
        let label = label(
            &self.names,
            &values.iter().map(ToString::to_string).collect::<Vec<_>>(),
        );
        let source = substitute(&self.template, &vars)
            .map_err(|e| bad_input(format!("{}: {e}", self.file)))?;
        let payload = payload_of(&source).map_err(|e| bad_input(format!("{}: {e}", self.file)))?;
        Ok(Job {
            point: k,
            label,
            values: values.iter().map(ToString::to_string).collect(),
            name: format!("{}[{k}]", self.file),
            source,
            base: self.base.clone(),
            payload,
            timing_only,
        })
    }
}

/// Every point's job of `trace` over `params`.
pub(crate) fn jobs_of(
    trace: &Path,
    template: &Template,
    params: &[Param],
    timing_only: bool,
) -> Result<Vec<Job>, Failure> {
    let plan = Plan::new(trace, template, params.to_vec())?;
    (0..plan.points.len())
        .map(|k| plan.job(k, timing_only))
        .collect()
}

fn label(names: &[String], values: &[String]) -> String {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------- running

/// Builds one fresh device per run from the same map, CSR catalog and
/// timing (each thread its own device).
pub(crate) struct DeviceFactory {
    catalog: &'static csr::Catalog,
    map: SocMap,
    timing: sim_core::TimingConfig,
}

impl DeviceFactory {
    /// From the CLI's maps and `--timing`.
    pub(crate) fn new(maps: &Maps, timing: Option<&Path>) -> Result<Self, Failure> {
        let proto = maps.device_with_timing(timing)?;
        Ok(Self {
            catalog: proto.catalog(),
            map: proto.map().clone(),
            timing: proto.timing().clone(),
        })
    }

    /// The DMA clock of the timing the devices get.
    pub(crate) fn clock_ghz(&self) -> f64 {
        self.timing.clock_ghz
    }

    fn device(&self) -> Result<Device, String> {
        Device::with_timing(self.map.clone(), self.catalog, self.timing.clone())
            .map_err(|e| e.to_string())
    }
}

/// One trace run of a sweep or a calibration.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    /// Point index.
    pub point: usize,
    /// `name=value …` for messages.
    pub label: String,
    /// Parameter values as written in the CSV.
    pub values: Vec<String>,
    /// Trace name for messages and reports.
    pub name: String,
    /// The trace text.
    pub source: String,
    /// Directory for the trace's relative file names.
    pub base: PathBuf,
    /// `#@ payload` bytes, if given.
    pub payload: Option<u64>,
    /// Timing-only mode.
    pub timing_only: bool,
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Measured {
    /// Simulated cycles at the end of the trace.
    pub cycles: u64,
    /// The same in ns.
    pub ns: f64,
    /// Bytes that count for the bandwidth.
    pub payload: u64,
    /// Descriptors completed (TX + RX).
    pub descriptors: u64,
    /// The trace's exit status (0 ok, 1 expectation failed, 2 bad input).
    pub exit: u8,
    /// Host wall-clock seconds.
    pub host_seconds: f64,
    /// The first failure or error, if any.
    pub problem: Option<String>,
}

fn run_one(factory: &DeviceFactory, job: &Job) -> Result<Measured, String> {
    let mut dev = factory.device()?;
    dev.set_timing_only(job.timing_only);
    dev.set_trace(false);
    let mut files = crate::DirFiles {
        base: job.base.clone(),
    };
    let started = Instant::now();
    let (report, _session) = host_exec::run_source(dev, &job.source, &job.name, &mut files)
        .map_err(|errors| errors.join("\n"))?;
    let host_seconds = started.elapsed().as_secs_f64();
    let s = &report.summary;
    let problem = report
        .errors
        .iter()
        .chain(&report.failures)
        .next()
        .map(ToString::to_string);
    Ok(Measured {
        cycles: s.cycles,
        ns: s.sim_ns,
        payload: job.payload.unwrap_or(s.bytes),
        descriptors: s.descriptors,
        exit: report.exit_code(),
        host_seconds,
        problem,
    })
}

/// Runs `jobs` on up to `threads` threads (default: the host's available
/// parallelism), each job on its own device; results in job order.
pub(crate) fn run_jobs(
    factory: &DeviceFactory,
    jobs: &[Job],
    threads: Option<usize>,
) -> Vec<Result<Measured, String>> {
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, jobs.len().max(1));
    if threads == 1 {
        return jobs.iter().map(|j| run_one(factory, j)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, Result<Measured, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        mine.push((i, run_one(factory, job)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec![(usize::MAX, Err("a sweep thread panicked".into()))])
            })
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    let mut out: Vec<Result<Measured, String>> = (0..jobs.len())
        .map(|_| Err("not run".to_string()))
        .collect();
    for (i, r) in done {
        match out.get_mut(i) {
            Some(slot) => *slot = r,
            None => {
                if let (Some(first), Err(e)) = (out.first_mut(), r) {
                    *first = Err(e);
                }
            }
        }
    }
    out
}

// -------------------------------------------------------------------- CSV

/// One CSV row, formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    point: usize,
    values: Vec<String>,
    cycles: u64,
    ns: String,
    payload: u64,
    gbps: String,
    descriptors: u64,
    exit: u8,
    host_seconds: String,
}

impl Row {
    fn new(job: &Job, m: &Measured, host_time: bool) -> Self {
        let gbps = if m.ns > 0.0 {
            m.payload as f64 / m.ns
        } else {
            0.0
        };
        Row {
            point: job.point,
            values: job.values.clone(),
            cycles: m.cycles,
            ns: format!("{:.1}", m.ns),
            payload: m.payload,
            gbps: format!("{gbps:.3}"),
            descriptors: m.descriptors,
            exit: m.exit,
            host_seconds: if host_time {
                format!("{:.6}", m.host_seconds)
            } else {
                String::new()
            },
        }
    }

    fn label(&self, names: &[String]) -> String {
        label(names, &self.values)
    }

    fn line(&self) -> String {
        let mut cells = vec![self.point.to_string()];
        cells.extend(self.values.iter().cloned());
        cells.extend([
            self.cycles.to_string(),
            self.ns.clone(),
            self.payload.to_string(),
            self.gbps.clone(),
            self.descriptors.to_string(),
            self.exit.to_string(),
            self.host_seconds.clone(),
        ]);
        cells.join(",")
    }
}

/// Columns after the parameters.
const RESULT_COLUMNS: [&str; 7] = [
    "cycles",
    "ns",
    "payload_bytes",
    "gbps",
    "descriptors",
    "exit",
    "host_seconds",
];

/// What a partial CSV's first line records, for `sweep merge`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SweepMeta {
    points: usize,
    x: Option<String>,
    published: Published,
    trace: String,
}

const SHARD_PREFIX: &str = "# neuron-sim sweep shard ";

impl SweepMeta {
    fn line(&self, (i, n): (usize, usize)) -> String {
        format!(
            "{SHARD_PREFIX}{i}/{n}: points={} x={} published={} trace={}",
            self.points,
            self.x.as_deref().unwrap_or("-"),
            self.published.name(),
            self.trace
        )
    }

    /// Parses the first line of a partial CSV: (meta, shard).
    fn parse(line: &str) -> Option<(Self, (usize, usize))> {
        let rest = line.strip_prefix(SHARD_PREFIX)?;
        let (shard, rest) = rest.split_once(": ")?;
        let shard = parse_shard(shard).ok()?;
        let rest = rest.strip_prefix("points=")?;
        let (points, rest) = rest.split_once(" x=")?;
        let (x, rest) = rest.split_once(" published=")?;
        let (published, trace) = rest.split_once(" trace=")?;
        Some((
            SweepMeta {
                points: points.parse().ok()?,
                x: (x != "-").then(|| x.to_string()),
                published: Published::from_name(published)?,
                trace: trace.to_string(),
            },
            shard,
        ))
    }
}

fn header(names: &[String]) -> String {
    let mut cols = vec!["point".to_string()];
    cols.extend(names.iter().cloned());
    cols.extend(RESULT_COLUMNS.iter().map(|c| (*c).to_string()));
    cols.join(",")
}

fn render_csv(
    names: &[String],
    rows: &[Row],
    shard: Option<((usize, usize), &SweepMeta)>,
) -> String {
    let mut out = String::new();
    if let Some((s, meta)) = shard {
        out.push_str(&meta.line(s));
        out.push('\n');
    }
    out.push_str(&header(names));
    out.push('\n');
    for r in rows {
        out.push_str(&r.line());
        out.push('\n');
    }
    out
}

/// A sweep CSV read back.
#[derive(Clone, Debug)]
struct Csv {
    names: Vec<String>,
    rows: Vec<Row>,
}

impl Csv {
    fn parse(text: &str) -> Result<Self, String> {
        let mut lines = text.lines().filter(|l| !l.starts_with('#'));
        let head = lines.next().ok_or("empty CSV")?;
        let cols: Vec<&str> = head.split(',').collect();
        let n = cols.len();
        if n < 1 + RESULT_COLUMNS.len()
            || cols[0] != "point"
            || cols[n - RESULT_COLUMNS.len()..] != RESULT_COLUMNS
        {
            return Err(format!("not a neuron-sim sweep CSV header: `{head}`"));
        }
        let names: Vec<String> = cols[1..n - RESULT_COLUMNS.len()]
            .iter()
            .map(|s| (*s).to_string())
            .collect();
        let mut rows = Vec::new();
        for (i, line) in lines.enumerate() {
            let c: Vec<&str> = line.split(',').collect();
            let bad = || format!("CSV row {}: `{line}`", i + 1);
            if c.len() != n {
                return Err(bad());
            }
            let p = names.len() + 1;
            let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
            rows.push(Row {
                point: c[0].parse().map_err(|_| bad())?,
                values: c[1..p].iter().map(|s| (*s).to_string()).collect(),
                cycles: num(c[p])?,
                ns: c[p + 1].to_string(),
                payload: num(c[p + 2])?,
                gbps: c[p + 3].to_string(),
                descriptors: num(c[p + 4])?,
                exit: c[p + 5].parse().map_err(|_| bad())?,
                host_seconds: c[p + 6].to_string(),
            });
        }
        Ok(Csv { names, rows })
    }
}

/// Joins partial CSVs (name, text) into the CSV of one run.
fn merge(parts: &[(String, String)]) -> Result<(String, SweepMeta), String> {
    let mut meta: Option<SweepMeta> = None;
    let mut names: Option<Vec<String>> = None;
    let mut shards_seen = BTreeMap::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut total_shards = None;
    for (file, text) in parts {
        let first = text.lines().next().unwrap_or("");
        let (m, (i, n)) = SweepMeta::parse(first).ok_or_else(|| {
            format!("{file}: not a partial sweep CSV (first line `{SHARD_PREFIX}I/N: …`; run with --shard)")
        })?;
        match &meta {
            None => meta = Some(m),
            Some(prev) if *prev != m => {
                return Err(format!(
                    "{file}: from another sweep (`{first}` vs points={} trace={})",
                    prev.points, prev.trace
                ));
            }
            Some(_) => {}
        }
        if *total_shards.get_or_insert(n) != n {
            return Err(format!(
                "{file}: shard {i}/{n}, but other parts have N = {total_shards:?}"
            ));
        }
        if let Some(other) = shards_seen.insert(i, file.clone()) {
            return Err(format!("{file}: shard {i}/{n} given twice (also {other})"));
        }
        let csv = Csv::parse(text).map_err(|e| format!("{file}: {e}"))?;
        match &names {
            None => names = Some(csv.names.clone()),
            Some(prev) if *prev != csv.names => {
                return Err(format!(
                    "{file}: other parameters ({:?} vs {prev:?})",
                    csv.names
                ));
            }
            Some(_) => {}
        }
        for r in csv.rows {
            if r.point % n != i {
                return Err(format!(
                    "{file}: point {} does not belong to shard {i}/{n}",
                    r.point
                ));
            }
            rows.push(r);
        }
    }
    let (Some(meta), Some(names), Some(n)) = (meta, names, total_shards) else {
        return Err("no parts to merge".into());
    };
    let missing: Vec<usize> = (0..n).filter(|i| !shards_seen.contains_key(i)).collect();
    if !missing.is_empty() {
        return Err(format!("missing shard(s) {missing:?} of {n}"));
    }
    rows.sort_by_key(|r| r.point);
    let indices: Vec<usize> = rows.iter().map(|r| r.point).collect();
    if indices != (0..meta.points).collect::<Vec<_>>() {
        return Err(format!(
            "the parts hold points {indices:?}, expected 0..{} once each",
            meta.points
        ));
    }
    Ok((render_csv(&names, &rows, None), meta))
}

// -------------------------------------------------------------------- SVG

/// A published figure to draw.
struct Figure {
    /// x in bytes, or None for a horizontal line across the plot.
    x: Option<f64>,
    /// GB/s.
    y: f64,
    /// What it is and where it is published.
    label: &'static str,
}

/// The published figures of a set (hardware-and-simulators §0, §A.1–A.4).
fn figures(set: Published) -> Vec<Figure> {
    match set {
        Published::Engine => vec![
            Figure {
                x: None,
                y: 23.0,
                label: "23 B/ns: one engine's peak (§0, §A.7)",
            },
            Figure {
                x: Some(32768.0),
                y: 32768.0 / 1416.0,
                label: "32 KiB in 1416 ns, one engine (§0, §A.3)",
            },
            Figure {
                x: Some(4096.0),
                y: 23.0,
                label: "≥ 4 KiB/partition saturates (§A.4)",
            },
        ],
        Published::Core => vec![
            Figure {
                x: None,
                y: 368.0,
                label: "368 GB/s: 16 engines × 23 B/ns (§0)",
            },
            Figure {
                x: Some(4096.0),
                y: 368.0,
                label: "≥ 4 KiB/partition saturates (§A.4)",
            },
        ],
        Published::Chip => vec![
            Figure {
                x: None,
                y: 2900.0,
                label: "2.9 TB/s: chip HBM (§0, §A.1)",
            },
            Figure {
                x: Some(4096.0),
                y: 2900.0,
                label: "≥ 4 KiB/partition saturates HBM (§A.4)",
            },
        ],
        Published::Auto | Published::None => Vec::new(),
    }
}

fn resolve_published(set: Published, max_gbps: f64) -> Published {
    if set != Published::Auto {
        return set;
    }
    let peaks = [
        (Published::Engine, 23.0f64),
        (Published::Core, 368.0),
        (Published::Chip, 2900.0),
    ];
    let m = max_gbps.max(1e-9);
    peaks
        .iter()
        .min_by(|a, b| {
            let da = (a.1 / m).ln().abs();
            let db = (b.1 / m).ln().abs();
            da.total_cmp(&db)
        })
        .map_or(Published::None, |p| p.0)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn size_label(v: f64) -> String {
    let v = v as u64;
    if v >= 1 << 30 && v.is_multiple_of(1 << 30) {
        format!("{} GiB", v >> 30)
    } else if v >= 1 << 20 && v.is_multiple_of(1 << 20) {
        format!("{} MiB", v >> 20)
    } else if v >= 1 << 10 && v.is_multiple_of(1 << 10) {
        format!("{} KiB", v >> 10)
    } else {
        format!("{v}")
    }
}

/// A "nice" axis top and tick step for `max`.
fn nice_axis(max: f64) -> (f64, f64) {
    let max = max.max(1e-9);
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
];

/// Bandwidth (GB/s) versus the x parameter on a log axis, one series per
/// combination of the other parameters, published figures overlaid.
fn render_svg(
    csv: &Csv,
    x: Option<&str>,
    published: Published,
    title: &str,
) -> Result<String, String> {
    let numeric = |i: usize| {
        csv.rows.iter().all(|r| {
            r.values
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|v| v > 0)
        })
    };
    let xi = match x {
        Some(name) => {
            let i = csv.names.iter().position(|n| n == name).ok_or_else(|| {
                format!(
                    "--x {name}: no such parameter (have: {})",
                    csv.names.join(", ")
                )
            })?;
            if !numeric(i) {
                return Err(format!("--x {name}: the plot needs positive numbers"));
            }
            i
        }
        None => (0..csv.names.len())
            .find(|&i| {
                numeric(i) && {
                    let mut v: Vec<&String> =
                        csv.rows.iter().filter_map(|r| r.values.get(i)).collect();
                    v.sort();
                    v.dedup();
                    v.len() > 1
                }
            })
            .ok_or("the plot needs a numeric parameter with several values (--x NAME)")?,
    };
    let pts: Vec<(f64, f64, String)> = csv
        .rows
        .iter()
        .map(|r| {
            let xv = r
                .values
                .get(xi)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(1) as f64;
            let y = r.gbps.parse::<f64>().unwrap_or(0.0);
            let others: Vec<String> = csv
                .names
                .iter()
                .zip(&r.values)
                .enumerate()
                .filter(|(i, _)| *i != xi)
                .map(|(_, (n, v))| format!("{n}={v}"))
                .collect();
            (xv, y, others.join(" "))
        })
        .collect();
    let max_y = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let set = resolve_published(published, max_y);
    let figs = figures(set);
    let (mut x_lo, mut x_hi) = pts
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    for f in &figs {
        if let Some(fx) = f.x {
            x_lo = x_lo.min(fx);
            x_hi = x_hi.max(fx);
        }
    }
    let (lx0, mut lx1) = (x_lo.log2().floor(), x_hi.log2().ceil());
    if lx1 <= lx0 {
        lx1 = lx0 + 1.0;
    }
    let y_top_raw = figs.iter().map(|f| f.y).fold(max_y, f64::max) * 1.08;
    let (y_top, y_step) = nice_axis(y_top_raw);
    let (w, h) = (900.0, 520.0);
    let (left, right, top, bottom) = (80.0, 270.0, 50.0, 70.0);
    let pw = w - left - right;
    let ph = h - top - bottom;
    let sx = |v: f64| left + (v.log2() - lx0) / (lx1 - lx0) * pw;
    let sy = |v: f64| top + ph - v / y_top * ph;
    let mut s = String::new();
    s.push_str(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    ));
    s.push_str(&format!(
        "<title>neuron-sim sweep: {}</title>\n<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"white\"/>\n",
        xml_escape(title)
    ));
    s.push_str(&format!(
        "<text x=\"{left}\" y=\"24\" font-size=\"15\">Bandwidth vs {} — {}</text>\n",
        xml_escape(&csv.names[xi]),
        xml_escape(title)
    ));
    // Axes and grid.
    s.push_str(&format!(
        "<g class=\"axes\" stroke=\"#333\"><line x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/><line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{:.1}\"/></g>\n",
        top + ph,
        left + pw,
        top + ph,
        top + ph
    ));
    let mut e = lx0;
    while e <= lx1 + 1e-9 {
        let v = e.exp2();
        let px = sx(v);
        s.push_str(&format!(
            "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            top + ph,
            top + ph + 16.0,
            size_label(v)
        ));
        e += 1.0;
    }
    let mut yv = 0.0;
    while yv <= y_top + 1e-9 {
        let py = sy(yv);
        s.push_str(&format!(
            "<line x1=\"{left}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left + pw,
            left - 6.0,
            py + 4.0,
            trim_float(yv)
        ));
        yv += y_step;
    }
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{} (log scale)</text>\n<text transform=\"translate(20 {:.1}) rotate(-90)\" text-anchor=\"middle\">GB/s (bytes per ns)</text>\n",
        left + pw / 2.0,
        h - 30.0,
        xml_escape(&csv.names[xi]),
        top + ph / 2.0
    ));
    // Published guidance on bytes per partition (§A.4).
    s.push_str("<g class=\"guidance\" stroke=\"#999\" stroke-dasharray=\"2 3\">\n");
    for (gx, text) in [
        (256.0, "< 256 B: overhead-bound"),
        (2048.0, "≥ 2 KiB: minimum recommended"),
    ] {
        if gx >= lx0.exp2() && gx <= lx1.exp2() {
            let px = sx(gx);
            s.push_str(&format!(
                "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" stroke=\"none\" fill=\"#777\" font-size=\"10\">{}</text>\n",
                top + ph,
                px + 3.0,
                top + 12.0,
                xml_escape(text)
            ));
        }
    }
    s.push_str("</g>\n");
    // Series.
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (xv, y, key) in &pts {
        match series.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => v.push((*xv, *y)),
            None => series.push((key.clone(), vec![(*xv, *y)])),
        }
    }
    let mut legend_y = top + 10.0;
    let lx = left + pw + 20.0;
    for (i, (key, mut v)) in series.into_iter().enumerate() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = PALETTE[i % PALETTE.len()];
        let path: Vec<String> = v
            .iter()
            .map(|(a, b)| format!("{:.1},{:.1}", sx(*a), sy(*b)))
            .collect();
        s.push_str(&format!(
            "<g class=\"sim\"><polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\n",
            path.join(" ")
        ));
        for (a, b) in &v {
            s.push_str(&format!(
                "<circle class=\"sim-point\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{color}\"><title>{}: {} GB/s</title></circle>\n",
                sx(*a),
                sy(*b),
                size_label(*a),
                trim_float(*b)
            ));
        }
        s.push_str("</g>\n");
        let name = if key.is_empty() {
            "simulated".to_string()
        } else {
            format!("simulated {key}")
        };
        s.push_str(&format!(
            "<line x1=\"{lx}\" y1=\"{legend_y:.1}\" x2=\"{:.1}\" y2=\"{legend_y:.1}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            lx + 20.0,
            lx + 26.0,
            legend_y + 4.0,
            xml_escape(&name)
        ));
        legend_y += 18.0;
    }
    // Published figures.
    if !figs.is_empty() {
        s.push_str("<g class=\"published\" fill=\"none\" stroke=\"#000\">\n");
        for f in &figs {
            let py = sy(f.y);
            match f.x {
                None => s.push_str(&format!(
                    "<line class=\"published-line\" x1=\"{left}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke-dasharray=\"6 4\"><title>{}</title></line>\n",
                    left + pw,
                    xml_escape(f.label)
                )),
                Some(fx) => {
                    let px = sx(fx);
                    s.push_str(&format!(
                        "<path class=\"published-point\" d=\"M {px:.1} {:.1} L {:.1} {py:.1} L {px:.1} {:.1} L {:.1} {py:.1} Z\" stroke-width=\"1.5\"><title>{}</title></path>\n",
                        py - 6.0,
                        px + 6.0,
                        py + 6.0,
                        px - 6.0,
                        xml_escape(f.label)
                    ));
                }
            }
            s.push_str(&format!(
                "<text x=\"{lx}\" y=\"{:.1}\" stroke=\"none\" fill=\"#000\" font-size=\"10\">{} {}</text>\n",
                legend_y + 4.0,
                if f.x.is_some() { "◇" } else { "- -" },
                xml_escape(f.label)
            ));
            legend_y += 16.0;
        }
        s.push_str("</g>\n");
    }
    s.push_str(&format!(
        "<text x=\"{left}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555\">Published figures: hardware-and-simulators.md §0, §A.1–A.4 (AWS Neuron docs: Trn2 chip page, NKI DMA overview, DMA bandwidth guide).</text>\n",
        h - 8.0
    ));
    s.push_str("</svg>\n");
    Ok(s)
}

/// `12.5`, `300` (no trailing zeros).
fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
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

    #[test]
    fn template_metadata() {
        let t = Template::parse(
            "#@ param bytes=128..512*2\n#@ x bytes\n#@ published core\n#@ payload {bytes*2}\nrun\n",
        )
        .unwrap();
        assert_eq!(t.params.len(), 1);
        assert_eq!(t.x.as_deref(), Some("bytes"));
        assert_eq!(t.published, Some(Published::Core));
        assert!(Template::parse("#@ nonsense\n").is_err());
        assert!(Template::parse("#@ published lots\n").is_err());
        assert_eq!(payload_of("#@ payload 1024\nrun\n").unwrap(), Some(1024));
        assert_eq!(payload_of("run\n").unwrap(), None);
        assert!(payload_of("#@ payload {x}\n").is_err());
    }

    #[test]
    fn shards_and_meta_round_trip() {
        assert_eq!(parse_shard("2/5").unwrap(), (2, 5));
        for bad in ["5/5", "1/0", "x/2", "3"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
        let m = SweepMeta {
            points: 10,
            x: Some("bytes".into()),
            published: Published::Core,
            trace: "traces/calib/a b.trace".into(),
        };
        assert_eq!(SweepMeta::parse(&m.line((1, 3))), Some((m, (1, 3))));
    }

    fn row(point: usize, bytes: u64, gbps: f64) -> Row {
        Row {
            point,
            values: vec![bytes.to_string()],
            cycles: 100 + point as u64,
            ns: "117.6".into(),
            payload: bytes,
            gbps: format!("{gbps:.3}"),
            descriptors: 4,
            exit: 0,
            host_seconds: String::new(),
        }
    }

    #[test]
    fn merge_rebuilds_the_single_run() {
        let names = vec!["bytes".to_string()];
        let rows: Vec<Row> = (0..5)
            .map(|k| row(k, 128 << k, 10.0 * k as f64 + 1.0))
            .collect();
        let meta = SweepMeta {
            points: 5,
            x: None,
            published: Published::Auto,
            trace: "t.trace".into(),
        };
        let full = render_csv(&names, &rows, None);
        let parts: Vec<(String, String)> = (0..2)
            .rev()
            .map(|i| {
                let mine: Vec<Row> = rows.iter().filter(|r| r.point % 2 == i).cloned().collect();
                (
                    format!("p{i}"),
                    render_csv(&names, &mine, Some(((i, 2), &meta))),
                )
            })
            .collect();
        let (merged, m) = merge(&parts).unwrap();
        assert_eq!(merged, full);
        assert_eq!(m, meta);
        // A missing or doubled part is an error.
        assert!(merge(&parts[..1]).unwrap_err().contains("missing shard"));
        let doubled = vec![parts[0].clone(), parts[0].clone()];
        assert!(merge(&doubled).unwrap_err().contains("twice"));
        assert!(merge(&[("f".into(), full)]).is_err());
    }

    #[test]
    fn svg_has_series_and_published_markers() {
        let names = vec!["bytes".to_string()];
        let rows: Vec<Row> = (0..6)
            .map(|k| row(k, 128 << k, 50.0 * k as f64 + 20.0))
            .collect();
        let csv = Csv::parse(&render_csv(&names, &rows, None)).unwrap();
        let svg = render_svg(&csv, None, Published::Auto, "t & <t>").unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("class=\"sim-point\"").count(), 6);
        // Max 270 GB/s: the NeuronCore set (368 GB/s) is the nearest.
        assert!(svg.contains("368 GB/s"));
        assert!(svg.contains("class=\"published-point\""));
        assert!(svg.contains("class=\"published-line\""));
        assert!(svg.contains("t &amp; &lt;t&gt;"));
        assert!(render_svg(&csv, Some("nope"), Published::Core, "t").is_err());
        let none = render_svg(&csv, None, Published::None, "t").unwrap();
        assert!(!none.contains("published-point"));
    }

    #[test]
    fn nice_axes() {
        assert_eq!(nice_axis(397.0), (400.0, 100.0));
        assert_eq!(nice_axis(26.0), (30.0, 10.0));
        assert_eq!(resolve_published(Published::Auto, 24.0), Published::Engine);
        assert_eq!(resolve_published(Published::Auto, 2800.0), Published::Chip);
        assert_eq!(resolve_published(Published::None, 2800.0), Published::None);
    }
}
