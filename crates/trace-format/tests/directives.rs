//! One test per directive, and one per error message (line and column asserted).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use trace_format::{
    AddrBase, AddrExpr, ExpectCheck, FileRef, FillContent, FillPattern, Index, MAX_ERRORS,
    ParseError, Span, StatementKind, parse,
};

/// Parses a one-statement trace and returns the statement with spans cleared.
fn one(src: &str) -> StatementKind {
    let mut trace = parse(src, "t.trace").unwrap_or_else(|e| panic!("{src:?}: {e:?}"));
    assert_eq!(trace.statements.len(), 1, "{src:?}");
    trace.clear_spans();
    trace.statements.remove(0).kind
}

fn addr(s: &str) -> AddrExpr {
    let mut a: AddrExpr = s.parse().unwrap();
    a.clear_spans();
    a
}

fn file(path: &str) -> FileRef {
    FileRef {
        path: path.into(),
        span: Span::default(),
    }
}

/// All errors of `src`, rendered.
fn errors(src: &str) -> Vec<String> {
    match parse(src, "t.trace") {
        Ok(t) => panic!("{src:?} parsed: {t:?}"),
        Err(e) => e.iter().map(ToString::to_string).collect(),
    }
}

/// The single error of `src`, rendered.
fn error(src: &str) -> String {
    let e = errors(src);
    assert_eq!(e.len(), 1, "{e:#?}");
    e[0].clone()
}

#[test]
fn empty_and_comments() {
    assert!(parse("", "t").unwrap().statements.is_empty());
    assert!(
        parse("\n  # only a comment\n\t\n", "t")
            .unwrap()
            .statements
            .is_empty()
    );
    assert_eq!(
        parse("\u{feff}dump hbm0 len=1\r\n", "t")
            .unwrap()
            .statements
            .len(),
        1
    );
}

#[test]
fn statement_spans() {
    let t = parse("\n  write32 hbm0 0x1   # c\nread32 hbm0\n", "t").unwrap();
    assert_eq!(t.statements[0].span, Span::new(2, 3, 16));
    assert_eq!(t.statements[1].span, Span::new(3, 1, 11));
    assert_eq!(
        t.statements[0].kind.try_addr().unwrap().span,
        Span::new(2, 11, 4)
    );
}

#[test]
fn write32() {
    assert_eq!(
        one("write32 eng0.m2s.q0.q_cfg 0x0003_0000"),
        StatementKind::Write32 {
            addr: addr("eng0.m2s.q0.q_cfg"),
            value: 0x30000
        }
    );
    assert_eq!(
        one("write32 0x2000000000 4294967295"),
        StatementKind::Write32 {
            addr: addr("0x2000000000"),
            value: u32::MAX
        }
    );
}

#[test]
fn read32() {
    assert_eq!(
        one("read32 eng0.m2s.q0.q_cfg"),
        StatementKind::Read32 {
            addr: addr("eng0.m2s.q0.q_cfg"),
            expect: None,
            mask: None
        }
    );
    assert_eq!(
        one("read32 eng0.m2s.q0.q_cfg == 0x03030000"),
        StatementKind::Read32 {
            addr: addr("eng0.m2s.q0.q_cfg"),
            expect: Some(0x0303_0000),
            mask: None
        }
    );
    let k = one("read32 tpb0.sem.read[3]==2 mask=0xff");
    assert_eq!(
        k,
        StatementKind::Read32 {
            addr: addr("tpb0.sem.read[3]"),
            expect: Some(2),
            mask: Some(0xff)
        }
    );
    let AddrBase::Path(p) = &k.try_addr().unwrap().base else {
        panic!()
    };
    assert_eq!(p[2].index, Some(Index::Plain(3)));
    assert_eq!(
        one("read32 hbm0 mask=0xff == 2"),
        one("read32 hbm0 == 2 mask=0xff")
    );
}

#[test]
fn fill() {
    assert_eq!(
        one("fill hbm0+0x1000 len=4096 byte=0xab"),
        StatementKind::Fill {
            addr: addr("hbm0+0x1000"),
            len: 4096,
            content: FillContent::Byte(0xab)
        }
    );
    assert_eq!(
        one("fill hbm0 pattern=incr8 len=4_096"),
        StatementKind::Fill {
            addr: addr("hbm0"),
            len: 4096,
            content: FillContent::Pattern {
                kind: FillPattern::Incr8,
                seed: 0
            }
        }
    );
    assert_eq!(
        one("fill tpb0.sbuf[p5] len=16 pattern=incr32 seed=0xdeadbeef"),
        StatementKind::Fill {
            addr: addr("tpb0.sbuf[p5]"),
            len: 16,
            content: FillContent::Pattern {
                kind: FillPattern::Incr32,
                seed: 0xdead_beef
            }
        }
    );
    assert_eq!(
        one("fill hbm0 len=0x100000000 byte=0"),
        StatementKind::Fill {
            addr: addr("hbm0"),
            len: 1 << 32,
            content: FillContent::Byte(0)
        }
    );
}

#[test]
fn fill_patterns() {
    let b: Vec<u8> = (0..8)
        .map(|i| FillPattern::Incr32.byte_at(0xffff_fffe, i))
        .collect();
    assert_eq!(b, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    let b: Vec<u8> = (0..3)
        .map(|i| FillPattern::Incr8.byte_at(0xfe, i))
        .collect();
    assert_eq!(b, [0xfe, 0xff, 0x00]);
}

#[test]
fn write() {
    assert_eq!(
        one("write hbm0+0x1000 bytes=de_ad_be_ef"),
        StatementKind::Write {
            addr: addr("hbm0+0x1000"),
            bytes: vec![0xde, 0xad, 0xbe, 0xef]
        }
    );
}

#[test]
fn load() {
    assert_eq!(
        one("load tpb0.sbuf[p5]+0x100 file=data/x.bin"),
        StatementKind::Load {
            addr: addr("tpb0.sbuf[p5]+0x100"),
            path: file("data/x.bin"),
            offset: None,
            len: None
        }
    );
    assert_eq!(
        one(r#"load hbm0 file="my data/x \"1\".bin" offset=0x10 len=32"#),
        StatementKind::Load {
            addr: addr("hbm0"),
            path: file("my data/x \"1\".bin"),
            offset: Some(16),
            len: Some(32)
        }
    );
    let t = parse("load hbm0 file=a.bin", "t").unwrap();
    let StatementKind::Load { path, .. } = &t.statements[0].kind else {
        panic!()
    };
    assert_eq!(path.span, Span::new(1, 16, 5));
}

#[test]
fn expect() {
    assert_eq!(
        one("expect hbm0+0x1000 bytes=deadbeef"),
        StatementKind::Expect {
            addr: addr("hbm0+0x1000"),
            check: ExpectCheck::Bytes(vec![0xde, 0xad, 0xbe, 0xef])
        }
    );
    let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let mut digest = [0u8; 32];
    for (i, d) in digest.iter_mut().enumerate() {
        *d = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    assert_eq!(
        one(&format!("expect hbm0 len=4096 sha256={hex}")),
        StatementKind::Expect {
            addr: addr("hbm0"),
            check: ExpectCheck::Sha256 { len: 4096, digest }
        }
    );
    assert_eq!(
        one(&format!(
            "expect hbm0 sha256={} len=4096",
            hex.to_uppercase()
        )),
        one(&format!("expect hbm0 len=4096 sha256={hex}"))
    );
}

#[test]
fn dump() {
    assert_eq!(
        one("dump hbm0+0x1000 len=64"),
        StatementKind::Dump {
            addr: addr("hbm0+0x1000"),
            len: 64,
            file: None
        }
    );
    assert_eq!(
        one("dump hbm0+0x1000 len=4096 file=out/x.bin"),
        StatementKind::Dump {
            addr: addr("hbm0+0x1000"),
            len: 4096,
            file: Some(file("out/x.bin"))
        }
    );
}

#[test]
fn display_is_canonical() {
    let src = "\
write32 eng0.m2s.q0.q_cfg 0x30000
read32 tpb0.sem.read[3] == 2 mask=0xff
read32 eng0.m2s.q0.q_cfg
fill hbm0+0x1000 len=4096 byte=0xab
fill hbm0 len=16 pattern=incr32 seed=5
write hbm0-0x10 bytes=de_ad
load tpb0.sbuf[P5]+256 file=\"a b.bin\" offset=4 len=8
expect 0x10 bytes=00ff
expect hbm0 len=1 sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
dump hbm0 len=64 file=out/x.bin
";
    let t = parse(src, "t").unwrap();
    assert_eq!(
        t.to_string(),
        "\
write32 eng0.m2s.q0.q_cfg 0x00030000
read32 tpb0.sem.read[3] == 0x00000002 mask=0x000000ff
read32 eng0.m2s.q0.q_cfg
fill hbm0+0x1000 len=4096 byte=0xab
fill hbm0 len=16 pattern=incr32 seed=0x5
write hbm0-0x10 bytes=dead
load tpb0.sbuf[p5]+0x100 file=\"a b.bin\" offset=0x4 len=8
expect 0x10 bytes=00ff
expect hbm0 len=1 sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
dump hbm0 len=64 file=out/x.bin
"
    );
    let mut again = parse(&t.to_string(), "t").unwrap();
    let mut t = t;
    t.clear_spans();
    again.clear_spans();
    assert_eq!(t, again);
}

#[test]
fn error_struct_and_display() {
    let e: Vec<ParseError> = parse("\n\n   wirte32 hbm0 1", "dir/a.trace").unwrap_err();
    assert_eq!(e.len(), 1);
    assert_eq!((e[0].line, e[0].column, e[0].len), (3, 4, 7));
    assert_eq!(e[0].file, "dir/a.trace");
    assert_eq!(
        e[0].to_string(),
        "dir/a.trace:3:4: unknown directive 'wirte32' (expected one of: write32, read32, fill, \
         write, load, expect, dump, desc, doorbell, memcpy, inst_stream, memcpy_method, icache_init, icache_fill, expect_fault, expect_refusal, run, wait, alloc, allocator, allocator_destroy, scratchpad, copyin, copyout, batch_copy, free, acquire, mem_stats, runtime, driver, inst); did you mean 'write32'?"
    );
}

#[test]
fn error_messages() {
    let cases: &[(&str, &str)] = &[
        // directives
        (
            "frob hbm0",
            "1:1: unknown directive 'frob' (expected one of: write32, read32, fill, write, load, expect, dump, desc, doorbell, memcpy, inst_stream, memcpy_method, icache_init, icache_fill, expect_fault, expect_refusal, run, wait, alloc, allocator, allocator_destroy, scratchpad, copyin, copyout, batch_copy, free, acquire, mem_stats, runtime, driver, inst)",
        ),
        (
            "Fill hbm0 len=1 byte=0",
            "1:1: unknown directive 'Fill' (expected one of: write32, read32, fill, write, load, expect, dump, desc, doorbell, memcpy, inst_stream, memcpy_method, icache_init, icache_fill, expect_fault, expect_refusal, run, wait, alloc, allocator, allocator_destroy, scratchpad, copyin, copyout, batch_copy, free, acquire, mem_stats, runtime, driver, inst); did you mean 'fill'?",
        ),
        // lexical
        (
            "load hbm0 file=\"x.bin",
            "1:16: unterminated string (expected a closing '\"' before the end of the line)",
        ),
        ("dump hbm0 len=", "1:15: missing value for 'len'"),
        (
            "dump hbm0 len= 4",
            "1:16: unexpected whitespace after '=' (write len=4)",
        ),
        (
            "dump hbm0 len =4",
            "1:15: unexpected whitespace before '=' (write len=VALUE)",
        ),
        (
            "dump hbm0 len=1 =4",
            "1:17: expected an argument name before '='",
        ),
        (
            "dump hbm0 =4",
            "1:11: unexpected whitespace before '=' (write hbm0=VALUE)",
        ),
        (
            "dump hbm0 \"len\"=4",
            "1:11: expected an argument name before '=', found string \"len\"",
        ),
        ("read32 hbm0 ==", "1:15: missing value after '=='"),
        (
            "\"dump\" hbm0",
            "1:1: expected a directive name, found string \"dump\"",
        ),
        (
            "== 3",
            "1:1: expected a directive name at the start of the line, found '=='",
        ),
        (
            "dump hbm0 len=4\"x\"",
            "1:16: expected whitespace before string \"x\"",
        ),
        // generic argument checks
        (
            "fill hbm0 lenght=4 byte=1",
            "1:11: unknown argument 'lenght' for fill (expected one of: len, byte, pattern, seed); did you mean 'len'?",
        ),
        (
            "fill hbm0 len=4 bite=1",
            "1:17: unknown argument 'bite' for fill (expected one of: len, byte, pattern, seed); did you mean 'byte'?",
        ),
        (
            "write32 hbm0 1 mask=3",
            "1:16: unknown argument 'mask' for write32 (write32 takes no key=value arguments; usage: write32 ADDR VALUE)",
        ),
        (
            "dump hbm0 len=4 len=5",
            "1:17: duplicate argument 'len' (first given at column 11)",
        ),
        (
            "write32 hbm0 1 2",
            "1:16: unexpected argument '2' for write32 (usage: write32 ADDR VALUE)",
        ),
        (
            "write32 hbm0",
            "1:13: missing value for write32 (usage: write32 ADDR VALUE)",
        ),
        (
            "dump len=4",
            "1:11: missing address for dump (usage: dump ADDR len=N [file=PATH])",
        ),
        (
            "dump hbm0",
            "1:10: missing argument 'len' for dump (usage: dump ADDR len=N [file=PATH])",
        ),
        (
            "load hbm0 len=4",
            "1:16: missing argument 'file' for load (usage: load ADDR file=PATH [offset=N] [len=N])",
        ),
        (
            "write hbm0",
            "1:11: missing argument 'bytes' for write (usage: write ADDR bytes=HEX)",
        ),
        (
            "write32 hbm0 1 == 1",
            "1:16: '==' is not allowed with write32 (usage: write32 ADDR VALUE)",
        ),
        (
            "read32 == 1",
            "1:8: missing address before '==' (usage: read32 ADDR [== VALUE] [mask=M])",
        ),
        (
            "read32 hbm0 == 1 == 2",
            "1:18: duplicate '==' (first given at column 13)",
        ),
        // values
        (
            "write32 hbm0 0x1_0000_0000",
            "1:14: write32 value must fit in 32 bits (at most 0xffffffff), found '0x1_0000_0000'",
        ),
        (
            "write32 hbm0 zz",
            "1:14: write32 value expects a 32-bit number, found 'zz'",
        ),
        (
            "write32 hbm0 -1",
            "1:14: write32 value expects a 32-bit number, found '-1'",
        ),
        (
            "write32 hbm0 \"1\"",
            "1:14: write32 value expects a 32-bit number, found string \"1\"",
        ),
        (
            "read32 hbm0 == 0x100000000",
            "1:16: the expected value of read32 must fit in 32 bits (at most 0xffffffff), found '0x100000000'",
        ),
        (
            "read32 hbm0 mask=99999999999999999999",
            "1:18: 'mask' is too large: '99999999999999999999' does not fit in 64 bits",
        ),
        (
            "read32 hbm0 == 0x100 mask=0xff",
            "1:13: expected value 0x100 has bits outside mask 0xff, so the comparison can never hold",
        ),
        (
            "read32 hbm0 == 0 mask=0",
            "1:18: mask 0 keeps no bit of the value (it is always 0), so '== 0' always holds",
        ),
        (
            "read32 hbm0 mask=0 == 0",
            "1:13: mask 0 keeps no bit of the value (it is always 0), so '== 0' always holds",
        ),
        (
            "read32 hbm0 == 1 mask=0",
            "1:13: expected value 0x1 has bits outside mask 0x0, so the comparison can never hold",
        ),
        (
            "fill hbm0 len=4 byte=0x100",
            "1:22: 'byte' must fit in 8 bits (at most 0xff), found '0x100'",
        ),
        (
            "fill hbm0 len=0 byte=1",
            "1:15: 'len' must be greater than 0",
        ),
        (
            "fill hbm0 len=0x100000001 byte=1",
            "1:15: 'len' must be at most 0x100000000 (4 GiB), found '0x100000001'",
        ),
        (
            "fill hbm0 len=4k byte=1",
            "1:15: 'len' expects a length in bytes, found '4k'",
        ),
        (
            "fill hbm0 len=4 pattern=incr16",
            "1:25: unknown value 'incr16' for 'pattern' (expected one of: incr8, incr32); did you mean 'incr8'?",
        ),
        (
            "fill hbm0 len=4 byte=1 pattern=incr8",
            "1:24: 'byte' and 'pattern' cannot be used together",
        ),
        (
            "fill hbm0 len=4",
            "1:16: fill needs 'byte' or 'pattern' (usage: fill ADDR len=N (byte=B | pattern=incr8|incr32 [seed=S]))",
        ),
        (
            "fill hbm0 len=4 byte=1 seed=2",
            "1:24: 'seed' is only used with 'pattern'",
        ),
        (
            "fill hbm0 len=4 pattern=incr8 seed=256",
            "1:31: 'seed' for pattern=incr8 must fit in 8 bits (at most 0xff), found 0x100",
        ),
        (
            "fill hbm0 len=4 pattern=incr32 seed=0x100000000",
            "1:32: 'seed' for pattern=incr32 must fit in 32 bits (at most 0xffffffff), found 0x100000000",
        ),
        (
            "fill hbm0 len=6 pattern=incr32",
            "1:11: 'len' must be a multiple of 4 for pattern=incr32, found 6",
        ),
        (
            "write hbm0 bytes=0xdead",
            "1:18: 'bytes' takes hex digits in memory order, without a '0x' prefix",
        ),
        (
            "write hbm0 bytes=de_ag",
            "1:22: 'bytes' expects hex digits, found 'g'",
        ),
        (
            "write hbm0 bytes=dea",
            "1:18: 'bytes' expects whole bytes (an even number of hex digits), found 3 digits",
        ),
        (
            "write hbm0 bytes=__",
            "1:18: 'bytes' expects at least one byte of hex digits, found none",
        ),
        (
            "expect hbm0 len=4 sha256=0123456789ab",
            "1:26: 'sha256' expects 64 hex digits, found 12",
        ),
        (
            "expect hbm0 len=4 sha256=abc",
            "1:26: 'sha256' expects 64 hex digits, found 3",
        ),
        (
            "expect hbm0 bytes=00 sha256=0000000000000000000000000000000000000000000000000000000000000000",
            "1:22: 'bytes' and 'sha256' cannot be used together",
        ),
        (
            "expect hbm0 bytes=00 len=1",
            "1:22: 'len' is not used with 'bytes' (the length is the number of bytes given)",
        ),
        (
            "expect hbm0 sha256=0000000000000000000000000000000000000000000000000000000000000000",
            "1:13: 'sha256' needs 'len' (the number of bytes hashed)",
        ),
        (
            "expect hbm0 len=4",
            "1:18: 'len' needs 'sha256' (or use bytes=HEX to compare bytes)",
        ),
        (
            "expect hbm0",
            "1:12: expect needs 'bytes' or 'len' and 'sha256' (usage: expect ADDR (bytes=HEX | len=N sha256=HEX))",
        ),
        (
            "load hbm0 file=\"\"",
            "1:16: 'file' expects a file name, found an empty string",
        ),
        // addresses
        (
            "dump hbm0. len=1",
            "1:11: expected a name, found end of address",
        ),
        (
            "dump tpb0.sbuf[p] len=1",
            "1:17: expected a partition number after 'p', found ']'",
        ),
        (
            "dump tpb0.sbuf[p5 len=1",
            "1:18: expected ']' to close the index, found end of address",
        ),
        (
            "dump hbm0+foo len=1",
            "1:11: expected a number after '+', found 'foo' (offsets must be numbers)",
        ),
        (
            "dump hbm0*4 len=1",
            "1:10: expected '+', '-' or the end of the address, found '*'",
        ),
        (
            "dump \"hbm0\" len=1",
            "1:6: dump address expects an address, found string \"hbm0\"",
        ),
    ];
    let mut failures = Vec::new();
    for (src, want) in cases {
        let got = error(src);
        if got != format!("t.trace:{want}") {
            failures.push(format!(
                "source: {src}\n  got:  {got}\n  want: t.trace:{want}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn all_errors_are_reported_in_order() {
    let src = "\
write32 hbm0 0x1_0000_0000
dump hbm0 len=1          # fine
fil hbm0 len=1 byte=1
fill hbm0 lenght=1 byte=0x100
dump hbm0 size=1
";
    assert_eq!(
        errors(src),
        [
            "t.trace:1:14: write32 value must fit in 32 bits (at most 0xffffffff), found '0x1_0000_0000'",
            "t.trace:3:1: unknown directive 'fil' (expected one of: write32, read32, fill, write, load, expect, dump, desc, doorbell, memcpy, inst_stream, memcpy_method, icache_init, icache_fill, expect_fault, expect_refusal, run, wait, alloc, allocator, allocator_destroy, scratchpad, copyin, copyout, batch_copy, free, acquire, mem_stats, runtime, driver, inst); did you mean 'fill'?",
            "t.trace:4:11: unknown argument 'lenght' for fill (expected one of: len, byte, pattern, seed); did you mean 'len'?",
            "t.trace:4:25: 'byte' must fit in 8 bits (at most 0xff), found '0x100'",
            "t.trace:5:11: unknown argument 'size' for dump (expected one of: len, file)",
            "t.trace:5:17: missing argument 'len' for dump (usage: dump ADDR len=N [file=PATH])",
        ]
    );
}

#[test]
fn error_cap() {
    let src = "bogus\n".repeat(100);
    let e = parse(&src, "t").unwrap_err();
    assert_eq!(e.len(), MAX_ERRORS + 1);
    assert_eq!(e[MAX_ERRORS - 1].line, MAX_ERRORS as u32);
    assert_eq!(
        e[MAX_ERRORS].to_string(),
        "t:21:1: too many errors (showing the first 20); stopped parsing here"
    );
    // exactly MAX_ERRORS errors: no note
    let src = "bogus\n".repeat(MAX_ERRORS);
    assert_eq!(parse(&src, "t").unwrap_err().len(), MAX_ERRORS);
}

/// Found by the fuzz campaign (`trace`): host directives printed their
/// hint and file with Rust's `{:?}`, whose `\u{12}`, `\t` or `\0` escapes
/// the lexer does not know, so the canonical form parsed to other text.
#[test]
fn host_strings_print_back_to_themselves() {
    for src in [
        "alloc m size=0x3000 device usage=weight hint=\"layer\u{12}\"\n",
        "alloc m size=0x3000 device usage=weight hint=\"a\tb \\\"c\\\" d\\\\e\"\n",
        "alloc m size=0x3000 device usage=weight hint=plain\n",
        "alloc m size=0x100 device\ncopyin m file=\"dir/a\u{0}b c.bin\"\n",
    ] {
        let first = parse(src, "t").unwrap();
        let printed = first.to_string();
        let again = parse(&printed, "printed").unwrap();
        assert_eq!(again.to_string(), printed, "{src:?}");
        let (a, b) = (&first.statements, &again.statements);
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x.kind, y.kind, "{src:?} printed as {printed:?}");
        }
    }
}
