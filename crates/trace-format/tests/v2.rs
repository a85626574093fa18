//! Trace language v2: `desc`, `doorbell`, `run`, `wait` — one test per
//! directive and one per error message (line and column asserted).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use trace_format::{
    AddrExpr, AddrRole, CceOp, CmeOp, Compare, DEFAULT_WAIT_TIMEOUT, DescAddr, DescFields,
    DescFlag, DescFlags, Dtype, Float, MAX_DESC_LEN, MAX_DOORBELL, PathComponent, QueueRef,
    RunMode, Span, StatementKind, parse,
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

fn queue(path: &str, slot: Option<u64>) -> QueueRef {
    QueueRef {
        path: path
            .split('.')
            .map(|name| PathComponent {
                name: name.into(),
                index: None,
                span: Span::default(),
            })
            .collect(),
        slot,
        span: Span::default(),
    }
}

/// The single error of `src`, rendered.
fn error(src: &str) -> String {
    match parse(src, "t.trace") {
        Ok(t) => panic!("{src:?} parsed: {t:?}"),
        Err(e) => {
            assert_eq!(e.len(), 1, "{src:?}: {e:#?}");
            e[0].to_string()
        }
    }
}

#[test]
fn desc_minimal() {
    assert_eq!(
        one("desc eng0.s2m.q0 len=4096 dst=hbm0+0x200000"),
        StatementKind::Desc {
            queue: queue("eng0.s2m.q0", None),
            fields: DescFields {
                len: Some(4096),
                addr: Some(DescAddr {
                    role: AddrRole::Dst,
                    addr: addr("hbm0+0x200000"),
                }),
                ..DescFields::default()
            },
        }
    );
    assert_eq!(
        one("desc eng0.m2s.q0 len=4096 src=hbm0+0x100000 first last"),
        StatementKind::Desc {
            queue: queue("eng0.m2s.q0", None),
            fields: DescFields {
                len: Some(4096),
                addr: Some(DescAddr {
                    role: AddrRole::Src,
                    addr: addr("hbm0+0x100000"),
                }),
                flags: DescFlags {
                    first: true,
                    last: true,
                    ..DescFlags::default()
                },
                ..DescFields::default()
            },
        }
    );
}

#[test]
fn desc_slot_keys_and_flags() {
    let k = one(
        "desc eng128.m2s.q1[0x10] first len=65536 addr=0x1000 ring_id=3 op=crc32c crc_iv=7 \
         send_crc store_crc store_source_crc validate_crc use_stored_iv no_copy \
         last int dmb sow concat meta write_barrier",
    );
    let StatementKind::Desc { queue: q, fields } = &k else {
        panic!("{k:?}")
    };
    assert_eq!(*q, queue("eng128.m2s.q1", Some(16)));
    assert_eq!(fields.len, Some(MAX_DESC_LEN));
    assert_eq!(fields.addr.as_ref().map(|a| a.role), Some(AddrRole::Any));
    assert_eq!(fields.ring_id, Some(3));
    assert_eq!(fields.op, Some(CmeOp::Crc32c));
    assert_eq!(fields.crc_iv, Some(7));
    assert_eq!(fields.flags.iter().collect::<Vec<_>>(), DescFlag::ALL);
    assert_eq!(
        k.to_string(),
        "desc eng128.m2s.q1[16] len=65536 addr=0x1000 ring_id=3 op=crc32c crc_iv=7 first last \
         int dmb sow concat meta write_barrier send_crc store_crc store_source_crc validate_crc \
         use_stored_iv no_copy"
    );
    // flags may come anywhere, even before the queue
    assert_eq!(
        one("desc first eng0.m2s.q0 len=4 src=hbm0"),
        one("desc eng0.m2s.q0 len=4 src=hbm0 first")
    );
}

#[test]
fn desc_cce() {
    let k = one(
        "desc eng0.m2s.q0 len=256 src=tpb0.sbuf[p3] cce=fma in_dtype=bf16 out_dtype=fp32 \
         scale=-1.25e-3 op=copy",
    );
    let StatementKind::Desc { fields, .. } = &k else {
        panic!()
    };
    assert_eq!(fields.op, Some(CmeOp::Copy));
    assert_eq!(fields.cce, Some(CceOp::Fma));
    assert_eq!(fields.in_dtype, Some(Dtype::Bf16));
    assert_eq!(fields.out_dtype, Some(Dtype::Fp32));
    assert_eq!(fields.scale, Some(Float(-1.25e-3)));
    assert_eq!(
        k.to_string(),
        "desc eng0.m2s.q0 len=256 src=tpb0.sbuf[p3] op=copy cce=fma in_dtype=bf16 \
         out_dtype=fp32 scale=-0.00125"
    );
    for (text, value) in [("2", 2.0), ("0.5", 0.5), ("1E3", 1000.0), ("+7", 7.0)] {
        let StatementKind::Desc { fields, .. } =
            one(&format!("desc q len=1 src=0 cce=fma scale={text}"))
        else {
            panic!()
        };
        assert_eq!(fields.scale.map(Float::get), Some(value), "{text}");
    }
    for names in [Dtype::NAMES, CceOp::NAMES] {
        assert!(!names.is_empty());
    }
    for t in Dtype::ALL {
        let StatementKind::Desc { fields, .. } = one(&format!(
            "desc q len=1 src=0 cce=max in_dtype={t} out_dtype={t}"
        )) else {
            panic!()
        };
        assert_eq!((fields.in_dtype, fields.out_dtype), (Some(*t), Some(*t)));
    }
}

#[test]
fn desc_word1_buf2_raw() {
    let StatementKind::Desc { fields, .. } =
        one("desc eng0.m2s.q0 len=64 src=hbm0 word1=0x05080003 first last dmb")
    else {
        panic!()
    };
    assert_eq!(fields.word1, Some(0x0508_0003));
    let StatementKind::Desc { fields, .. } =
        one("desc eng0.s2m.q0 len=64 dst=hbm0 buf2=hbm1+0x40 sow int")
    else {
        panic!()
    };
    assert_eq!(fields.buf2, Some(addr("hbm1+0x40")));
    assert!(fields.flags.sow && fields.flags.int);

    let k = one("desc eng0.m2s.q0[3] raw=00112233_44556677_8899AABB_CCDDEEFF");
    let mut raw = [0u8; 16];
    for (i, b) in raw.iter_mut().enumerate() {
        *b = u8::try_from(i * 0x11).unwrap();
    }
    assert_eq!(
        k,
        StatementKind::Desc {
            queue: queue("eng0.m2s.q0", Some(3)),
            fields: DescFields {
                raw: Some(raw),
                ..DescFields::default()
            },
        }
    );
    assert_eq!(
        k.to_string(),
        "desc eng0.m2s.q0[3] raw=00112233445566778899aabbccddeeff"
    );
}

#[test]
fn desc_spans() {
    let src = "\n  desc eng0.m2s.q0[12] len=4 src=hbm0+0x10 buf2=hbm1  # c\n";
    let t = parse(src, "t").unwrap();
    let s = &t.statements[0];
    assert_eq!(s.span, Span::new(2, 3, 50));
    let q = s.kind.queue().unwrap();
    assert_eq!(q.span, Span::new(2, 8, 15));
    assert_eq!(q.path[0].span, Span::new(2, 8, 4));
    assert_eq!(q.path[2].span, Span::new(2, 17, 2)); // the name only; the slot is `[12]`
    assert_eq!(q.block_addr().span, Span::new(2, 8, 11));
    let spans: Vec<Span> = s.kind.addrs().iter().map(|a| a.span).collect();
    assert_eq!(spans, [Span::new(2, 34, 9), Span::new(2, 49, 4)]);
    assert!(s.kind.try_addr().is_none());
}

#[test]
fn doorbell() {
    assert_eq!(
        one("doorbell eng0.s2m.q0 1"),
        StatementKind::Doorbell {
            queue: queue("eng0.s2m.q0", None),
            count: 1
        }
    );
    assert_eq!(
        one("doorbell eng12.m2s.q3 0xff_ffff"),
        StatementKind::Doorbell {
            queue: queue("eng12.m2s.q3", None),
            count: MAX_DOORBELL
        }
    );
    let t = parse("doorbell eng0.m2s.q0 2", "t").unwrap();
    assert_eq!(
        t.statements[0].kind.queue().unwrap().span,
        Span::new(1, 10, 11)
    );
    assert!(t.statements[0].kind.addrs().is_empty());
}

#[test]
fn expect_fault() {
    assert_eq!(
        one("expect_fault eng0.s2m.q0"),
        StatementKind::ExpectFault {
            queue: queue("eng0.s2m.q0", None),
            cause: None,
            cause_span: Span::default(),
            count: None
        }
    );
    assert_eq!(
        one("expect_fault eng128.m2s.q3 cause=SEC_A_INT_CAUSE.PREF_RING_ID count=2"),
        StatementKind::ExpectFault {
            queue: queue("eng128.m2s.q3", None),
            cause: Some("SEC_A_INT_CAUSE.PREF_RING_ID".into()),
            cause_span: Span::default(),
            count: Some(2)
        }
    );
    assert_eq!(
        error("expect_fault eng0.m2s.q0 cause=PKT-LEN"),
        "t.trace:1:32: 'cause' expects a cause name (like SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE or PKT_LEN), found 'PKT-LEN'"
    );
    assert_eq!(
        error("expect_fault eng0.m2s.q0 count=0"),
        "t.trace:1:32: 'count' must be greater than 0"
    );
    assert!(error("expect_fault eng0.m2s.q0[3]").contains("slot"));
}

#[test]
fn run() {
    assert_eq!(
        one("run"),
        StatementKind::Run {
            mode: RunMode::Idle
        }
    );
    assert_eq!(
        one("run cycles=1_000"),
        StatementKind::Run {
            mode: RunMode::Cycles(1000)
        }
    );
    assert_eq!(
        one("run until=0x10000"),
        StatementKind::Run {
            mode: RunMode::Until(0x10000)
        }
    );
    assert_eq!(
        one("run until=0"),
        StatementKind::Run {
            mode: RunMode::Until(0)
        }
    );
    let t = parse("  run   # till idle", "t").unwrap();
    assert_eq!(t.statements[0].span, Span::new(1, 3, 3));
}

#[test]
fn run_has_no_address() {
    assert!(one("run").try_addr().is_none());
}

#[test]
fn wait() {
    assert_eq!(
        one("wait tpb0.sem.read[3] >= 16"),
        StatementKind::Wait {
            addr: addr("tpb0.sem.read[3]"),
            compare: Compare::Ge,
            value: 16,
            mask: None,
            timeout: None
        }
    );
    assert_eq!(
        one("wait eng0.m2s.q0.tdrhp==0x40000002 mask=0xc0ffffff timeout=500"),
        StatementKind::Wait {
            addr: addr("eng0.m2s.q0.tdrhp"),
            compare: Compare::Eq,
            value: 0x4000_0002,
            mask: Some(0xc0ff_ffff),
            timeout: Some(500)
        }
    );
    assert_eq!(
        one("wait timeout=5 hbm0+0x10!=0"),
        StatementKind::Wait {
            addr: addr("hbm0+0x10"),
            compare: Compare::Ne,
            value: 0,
            mask: None,
            timeout: Some(5)
        }
    );
    let t = parse("wait hbm0 >= 1", "t").unwrap();
    assert_eq!(
        t.statements[0].kind.try_addr().unwrap().span,
        Span::new(1, 6, 4)
    );
    assert!(Compare::Ge.holds(5, 5) && !Compare::Ge.holds(4, 5));
    assert!(Compare::Ne.holds(4, 5) && Compare::Eq.holds(5, 5));
    assert_eq!(DEFAULT_WAIT_TIMEOUT, 10_000_000);
}

/// Comparisons that can hold and can fail under their mask stay accepted: the
/// masked value ranges over the sub-masks of M (0 ..= M, not every number in
/// between), so `==`/`!=` need a value inside M and a mask that keeps a bit,
/// `>=` a value in 1 ..= M.
#[test]
fn masked_comparisons_that_can_go_either_way_parse() {
    for src in [
        "wait hbm0 == 0 mask=1",
        "wait hbm0 != 0 mask=1",
        "wait hbm0 == 1 mask=1",
        "wait hbm0 != 1 mask=1",
        "wait hbm0 >= 1 mask=1",
        "wait hbm0 == 0xf0f mask=0xf0f",
        "wait hbm0 != 0xf0f mask=0xf0f",
        "wait hbm0 >= 0xf0f mask=0xf0f",
        "wait hbm0 == 0 mask=0x80000000",
        "wait hbm0 == 0",
        "wait hbm0 != 0xffffffff",
        "wait hbm0 >= 0xffffffff",
        "read32 hbm0 == 0 mask=1",
        "read32 hbm0 == 0xffffffff",
        "read32 hbm0 mask=0",
    ] {
        assert!(parse(src, "t").is_ok(), "{src}: {:?}", parse(src, "t"));
    }
}

#[test]
fn display_is_canonical() {
    let src = "\
desc eng0.m2s.q0[0x5] src=hbm0+256 len=0x1000 last first
desc eng0.s2m.q0 len=64 dst=hbm0 buf2=hbm1 ring_id=2 int
desc eng0.m2s.q1 len=8 src=0x10 op=crc32 crc_iv=1 send_crc word1=0x1 dmb
desc eng0.m2s.q1 len=8 src=0x10 word1=0x1 dmb
desc eng0.m2s.q0 raw=0000000000000000000000000000000F
doorbell eng0.m2s.q0 0x10
run
run cycles=0x10
run until=1000
wait tpb0.sem.read[3] >= 0x10 timeout=0x100
wait hbm0 != 3 mask=0xff
";
    let err = parse(src, "t").unwrap_err();
    // line 3 mixes op=/crc_iv=/send_crc with word1=: rejected
    assert_eq!(
        err.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["t:3:33: 'op' cannot be used with 'word1' (word1=V gives the whole of descriptor word 1)"]
    );
    let src = src.replace(
        " op=crc32 crc_iv=1 send_crc word1=0x1",
        " op=crc32 crc_iv=1 send_crc",
    );
    let t = parse(&src, "t").unwrap();
    assert_eq!(
        t.to_string(),
        "\
desc eng0.m2s.q0[5] len=4096 src=hbm0+0x100 first last
desc eng0.s2m.q0 len=64 dst=hbm0 buf2=hbm1 ring_id=2 int
desc eng0.m2s.q1 len=8 src=0x10 op=crc32 crc_iv=1 dmb send_crc
desc eng0.m2s.q1 len=8 src=0x10 word1=0x00000001 dmb
desc eng0.m2s.q0 raw=0000000000000000000000000000000f
doorbell eng0.m2s.q0 16
run
run cycles=16
run until=1000
wait tpb0.sem.read[3] >= 0x00000010 timeout=256
wait hbm0 != 0x00000003 mask=0x000000ff
"
    );
    let mut again = parse(&t.to_string(), "t").unwrap();
    let mut t = t;
    t.clear_spans();
    again.clear_spans();
    assert_eq!(t, again);
}

#[test]
fn v1_lines_are_unchanged_by_the_new_operators() {
    // '!' and '>' are still word characters unless followed by '='
    assert_eq!(
        one("load hbm0 file=a>b!c.bin").to_string(),
        "load hbm0 file=a>b!c.bin"
    );
    assert_eq!(
        one("load hbm0 file=\"x!=y>=z\"").to_string(),
        "load hbm0 file=\"x!=y>=z\""
    );
}

#[test]
fn error_messages() {
    let usage_desc = "usage: desc QUEUE (len=N (src|dst|addr)=ADDR [KEY=VALUE…] [FLAG…] | raw=HEX)";
    let usage_wait = "usage: wait ADDR (== | != | >=) VALUE [mask=M] [timeout=N]";
    let flags = "first, last, int, dmb, sow, concat, meta, write_barrier, send_crc, store_crc, \
                 store_source_crc, validate_crc, use_stored_iv, no_copy";
    let cases: Vec<(&str, String)> = vec![
        // desc: the queue
        ("desc", format!("1:5: missing queue for desc ({usage_desc})")),
        (
            "desc 0x1000 len=4 src=hbm0",
            "1:6: desc queue expects a queue name like eng0.m2s.q0, found a number '0x1000'".into(),
        ),
        (
            "desc eng0.m2s.q0+0x10 len=4 src=hbm0",
            "1:17: a queue takes no offset, found '+0x10'; a ring slot is written as an index, \
             like eng0.m2s.q0[5]"
                .into(),
        ),
        (
            "desc eng0.m2s.q0[p3] len=4 src=hbm0",
            "1:17: a ring slot is a plain number, not a partition, found '[p3]'".into(),
        ),
        (
            "desc eng0.m2s.q0[0x1000000] len=4 src=hbm0",
            "1:17: ring slot must be less than 0x1000000 (ring lengths are 24-bit descriptor \
             counts), found 0x1000000"
                .into(),
        ),
        (
            "desc eng0.m2s.q0[ len=4 src=hbm0",
            "1:18: expected an index (a number, or pN for a partition), found end of address".into(),
        ),
        (
            "desc \"eng0.m2s.q0\" len=4 src=hbm0",
            "1:6: desc queue expects a queue (like eng0.m2s.q0 or eng0.m2s.q0[5]), found string \
             \"eng0.m2s.q0\""
                .into(),
        ),
        // desc: required keys
        (
            "desc eng0.m2s.q0 src=hbm0",
            format!("1:26: desc needs 'len' (or raw=HEX for a whole descriptor) ({usage_desc})"),
        ),
        (
            "desc eng0.m2s.q0 len=4",
            format!(
                "1:23: desc needs a buffer address: src=ADDR, dst=ADDR or addr=ADDR ({usage_desc})"
            ),
        ),
        (
            "desc eng0.m2s.q0 len=4 src=hbm0 dst=hbm1",
            "1:33: 'dst' cannot be used with 'src' (a descriptor has one buffer address)".into(),
        ),
        (
            "desc eng0.m2s.q0 addr=hbm1 len=4 src=hbm0",
            "1:34: 'src' cannot be used with 'addr' (a descriptor has one buffer address)".into(),
        ),
        // desc: ranges
        ("desc q len=0 src=0", "1:12: 'len' must be greater than 0".into()),
        (
            "desc q len=65537 src=0",
            "1:12: 'len' must be at most 65536 (0x10000), found '65537'".into(),
        ),
        (
            "desc q len=1 src=0 ring_id=4",
            "1:28: 'ring_id' must be at most 3, found '4'".into(),
        ),
        (
            "desc q len=1 src=0 crc_iv=8",
            "1:27: 'crc_iv' must be at most 7, found '8'".into(),
        ),
        (
            "desc q len=1 src=0 word1=0x100000000",
            "1:26: 'word1' must fit in 32 bits (at most 0xffffffff), found '0x100000000'".into(),
        ),
        (
            "desc q len=1 src=hbm0+foo",
            "1:23: expected a number after '+', found 'foo' (offsets must be numbers)".into(),
        ),
        // desc: raw
        (
            "desc q raw=00112233445566778899aabbccddeef",
            "1:12: 'raw' expects 32 hex digits, found 31".into(),
        ),
        (
            "desc q raw=00112233445566778899aabbccddeeff00",
            "1:12: 'raw' expects 32 hex digits, found 34".into(),
        ),
        (
            "desc q raw=0x00112233445566778899aabbccddee",
            "1:12: 'raw' takes hex digits in memory order, without a '0x' prefix".into(),
        ),
        (
            "desc q raw=00112233445566778899aabbccddeeff len=4",
            "1:45: 'len' cannot be used with 'raw' (raw=HEX gives all 16 bytes of the descriptor)"
                .into(),
        ),
        (
            "desc q last raw=00112233445566778899aabbccddeeff",
            "1:8: 'last' cannot be used with 'raw' (raw=HEX gives all 16 bytes of the descriptor)"
                .into(),
        ),
        // desc: choices and floats
        (
            "desc q len=1 src=0 op=crc33",
            "1:23: unknown value 'crc33' for 'op' (expected one of: copy, crc32, crc32c, cksum16, \
             cksum32, crc16, adler32, crc8); did you mean 'crc32'?"
                .into(),
        ),
        (
            "desc q len=1 src=0 cce=fma in_dtype=fp9",
            "1:37: unknown value 'fp9' for 'in_dtype' (expected one of: int8, uint8, int16, uint16, \
             bf16, fp16, int32, uint32, fp32, fp32r, fp8e3, fp8e4, fp8e5, fp4); did you mean 'fp4'?"
                .into(),
        ),
        (
            "desc q len=1 src=0 cce=fma scale=abc",
            "1:34: 'scale' expects a decimal number (like 0.5, 2 or -1.25e-3), found 'abc'".into(),
        ),
        (
            "desc q len=1 src=0 cce=fma scale=.5",
            "1:34: 'scale' expects a decimal number (like 0.5, 2 or -1.25e-3), found '.5'".into(),
        ),
        (
            "desc q len=1 src=0 cce=fma scale=nan",
            "1:34: 'scale' expects a decimal number (like 0.5, 2 or -1.25e-3), found 'nan'".into(),
        ),
        (
            "desc q len=1 src=0 cce=fma scale=1e999",
            "1:34: 'scale' is out of range: '1e999'".into(),
        ),
        (
            "desc q len=1 src=0 cce=fma scale=-1e39",
            "1:28: 'scale' is out of the FP32 range (at most 3.4028235e38 in magnitude), found -1e39"
                .into(),
        ),
        // desc: combinations
        (
            "desc q len=1 src=0 op=crc32 cce=add",
            "1:29: 'cce' cannot be used with op=crc32 (a CCE operation replaces the CME operation; \
             use op=copy or leave 'op' out)"
                .into(),
        ),
        (
            "desc q len=1 src=0 in_dtype=fp32",
            "1:20: 'in_dtype' is only used with 'cce'".into(),
        ),
        (
            "desc q len=1 src=0 scale=2",
            "1:20: 'scale' is only used with 'cce'".into(),
        ),
        (
            "desc q len=1 src=0 cce=add scale=2",
            "1:28: 'scale' is only used with cce=fma, not cce=add".into(),
        ),
        (
            "desc q len=1 src=0 word1=0x01080003 write_barrier",
            "1:37: 'write_barrier' cannot be used with 'word1' (word1=V gives the whole of \
             descriptor word 1)"
                .into(),
        ),
        (
            "desc q len=1 src=0 crc_iv=1 word1=0",
            "1:20: 'crc_iv' cannot be used with 'word1' (word1=V gives the whole of descriptor \
             word 1)"
                .into(),
        ),
        (
            "desc q len=1 dst=0 buf2=0x40 word1=0",
            "1:20: 'buf2' cannot be used with 'word1' (word1=V gives the whole of descriptor word \
             1)"
                .into(),
        ),
        (
            "desc q len=1 dst=0 buf2=0x40 no_copy",
            "1:30: 'no_copy' cannot be used with 'buf2' (buf2 is word 1 of an S2M descriptor; \
             'no_copy' sets word 1 of an M2S descriptor)"
                .into(),
        ),
        (
            "desc q len=1 dst=0 op=crc8 buf2=0x40",
            "1:20: 'op' cannot be used with 'buf2' (buf2 is word 1 of an S2M descriptor; 'op' \
             sets word 1 of an M2S descriptor)"
                .into(),
        ),
        // desc: flags
        (
            "desc q len=1 src=0 frist",
            format!("1:20: unknown flag 'frist' for desc (expected one of: {flags}); did you mean 'first'?"),
        ),
        (
            "desc q len=1 src=0 last last",
            "1:25: duplicate flag 'last' (first given at column 20)".into(),
        ),
        (
            "desc q len=1 src=0 first=1",
            "1:20: 'first' is a flag of desc: write it without '=' and a value".into(),
        ),
        (
            "desc q src=0 len",
            "1:14: missing value for 'len' (write len=VALUE)".into(),
        ),
        (
            "desc q len=1 src=0 5",
            format!("1:20: unexpected argument '5' for desc ({usage_desc})"),
        ),
        (
            "desc q len=1 src=0 \"first\"",
            format!("1:20: unexpected argument string \"first\" for desc ({usage_desc})"),
        ),
        (
            "desc q len=1 src=0 lenght=2",
            "1:20: unknown argument 'lenght' for desc (expected one of: len, src, dst, addr, buf2, \
             ring_id, op, cce, in_dtype, out_dtype, scale, crc_iv, word1, raw); did you mean 'len'?"
                .into(),
        ),
        (
            "desc q len=1 src=0 len=2",
            "1:20: duplicate argument 'len' (first given at column 8)".into(),
        ),
        (
            "desc q len=1 src=0 == 2",
            format!("1:20: '==' is not allowed with desc ({usage_desc})"),
        ),
        // doorbell
        (
            "doorbell eng0.m2s.q0",
            "1:21: missing count for doorbell (usage: doorbell QUEUE N)".into(),
        ),
        (
            "doorbell eng0.m2s.q0 0",
            "1:22: doorbell count must be greater than 0".into(),
        ),
        (
            "doorbell eng0.m2s.q0 0x1000000",
            "1:22: doorbell count must be at most 16777215 (0xffffff), found '0x1000000'".into(),
        ),
        (
            "doorbell eng0.m2s.q0[3] 1",
            "1:21: doorbell queue takes no ring slot, found '[3]'".into(),
        ),
        (
            "doorbell eng0.m2s.q0+4 1",
            "1:21: a queue takes no offset, found '+0x4'".into(),
        ),
        (
            "doorbell eng0.m2s.q0 1 first",
            "1:24: unexpected argument 'first' for doorbell (usage: doorbell QUEUE N)".into(),
        ),
        (
            "doorbell eng0.m2s.q0 one",
            "1:22: doorbell count expects a number in 1..=16777215 (0xffffff), found 'one'".into(),
        ),
        // run
        (
            "run 1000",
            "1:5: unexpected argument '1000' for run (usage: run [cycles=N | until=N])".into(),
        ),
        ("run cycles=0", "1:12: 'cycles' must be greater than 0".into()),
        (
            "run cycles=5 until=10",
            "1:14: 'until' cannot be used with 'cycles' (run for a number of cycles or until a \
             cycle, not both)"
                .into(),
        ),
        (
            "run until=10 cycles=5",
            "1:14: 'cycles' cannot be used with 'until' (run for a number of cycles or until a \
             cycle, not both)"
                .into(),
        ),
        (
            "run cycle=5",
            "1:5: unknown argument 'cycle' for run (expected one of: cycles, until); did you mean \
             'cycles'?"
                .into(),
        ),
        // wait
        (
            "wait hbm0",
            format!("1:10: wait needs a comparison: == VALUE, != VALUE or >= VALUE ({usage_wait})"),
        ),
        (
            "wait idle",
            format!(
                "1:10: wait needs a comparison: == VALUE, != VALUE or >= VALUE ({usage_wait}); to \
                 run until the device is idle, write 'run'"
            ),
        ),
        (
            "wait >= 1",
            format!("1:6: missing address before '>=' ({usage_wait})"),
        ),
        ("wait hbm0 !=", "1:13: missing value after '!='".into()),
        (
            "wait hbm0 == 1 != 2",
            "1:16: only one comparison is allowed ('==' given at column 11)".into(),
        ),
        (
            "wait hbm0 >= 1 >= 2",
            "1:16: duplicate '>=' (first given at column 11)".into(),
        ),
        (
            "wait hbm0 == 0x100 mask=0xff",
            "1:11: expected value 0x100 has bits outside mask 0xff, so the comparison can never \
             hold"
                .into(),
        ),
        (
            "wait hbm0 != 0x100 mask=0xff",
            "1:11: value 0x100 has bits outside mask 0xff, so '!=' always holds".into(),
        ),
        (
            "wait hbm0 >= 0x100 mask=0xff",
            "1:11: value 0x100 is above mask 0xff, so '>=' can never hold".into(),
        ),
        (
            "wait hbm0 >= 0",
            "1:11: '>= 0' always holds; there is nothing to wait for".into(),
        ),
        // mask=0: the masked value is always 0, so every comparison is constant
        (
            "wait hbm0 == 0 mask=0",
            "1:16: mask 0 keeps no bit of the value (it is always 0), so '== 0' always holds"
                .into(),
        ),
        (
            "wait hbm0 != 0 mask=0",
            "1:16: mask 0 keeps no bit of the value (it is always 0), so '!= 0' can never hold"
                .into(),
        ),
        (
            "wait hbm0 mask=0 == 0",
            "1:11: mask 0 keeps no bit of the value (it is always 0), so '== 0' always holds"
                .into(),
        ),
        (
            "wait hbm0 == 1 mask=0",
            "1:11: expected value 0x1 has bits outside mask 0x0, so the comparison can never hold"
                .into(),
        ),
        (
            "wait hbm0 != 1 mask=0",
            "1:11: value 0x1 has bits outside mask 0x0, so '!=' always holds".into(),
        ),
        (
            "wait hbm0 >= 1 mask=0",
            "1:11: value 0x1 is above mask 0x0, so '>=' can never hold".into(),
        ),
        (
            "wait hbm0 >= 0 mask=0",
            "1:11: '>= 0' always holds; there is nothing to wait for".into(),
        ),
        // bits outside a mask with a hole in it (the masked range is not 0..=M)
        (
            "wait hbm0 == 0x10 mask=0x0f0f",
            "1:11: expected value 0x10 has bits outside mask 0xf0f, so the comparison can never \
             hold"
                .into(),
        ),
        (
            "wait hbm0 != 0x10 mask=0x0f0f",
            "1:11: value 0x10 has bits outside mask 0xf0f, so '!=' always holds".into(),
        ),
        (
            "wait hbm0 == 1 timeout=0",
            "1:24: 'timeout' must be greater than 0".into(),
        ),
        (
            "wait hbm0 >= 0x100000000",
            "1:14: the expected value of wait must fit in 32 bits (at most 0xffffffff), found \
             '0x100000000'"
                .into(),
        ),
        // the new operators on v1 directives
        (
            "read32 hbm0 != 1",
            "1:13: '!=' is not allowed with read32 (usage: read32 ADDR [== VALUE] [mask=M])".into(),
        ),
        (
            "read32 hbm0>=1",
            "1:12: '>=' is not allowed with read32 (usage: read32 ADDR [== VALUE] [mask=M])".into(),
        ),
        (
            ">= 1",
            "1:1: expected a directive name at the start of the line, found '>='".into(),
        ),
    ];
    let mut failures = Vec::new();
    for (src, want) in &cases {
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
fn several_errors_on_one_line_are_all_reported() {
    let e = parse("desc eng0.m2s.q0", "t").unwrap_err();
    let msgs: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    assert!(msgs[0].starts_with("t:1:17: desc needs 'len'"));
    assert!(msgs[1].starts_with("t:1:17: desc needs a buffer address"));
}

/// Every ```trace block of the language reference parses, and prints back
/// to text that parses to the same statements.
#[test]
fn reference_examples_parse() {
    let doc = include_str!("../../../docs/trace-format.md");
    let mut blocks = 0;
    let mut rest = doc;
    while let Some(start) = rest.find("```trace\n") {
        let body = &rest[start + "```trace\n".len()..];
        let end = body.find("\n```").expect("unterminated block");
        let text = &body[..=end];
        let mut t = parse(text, "docs/trace-format.md")
            .unwrap_or_else(|e| panic!("block {blocks}:\n{text}\n{e:#?}"));
        let mut again = parse(&t.to_string(), "printed").unwrap();
        t.clear_spans();
        again.clear_spans();
        assert_eq!(t, again);
        blocks += 1;
        rest = &body[end..];
    }
    assert!(blocks >= 10, "found only {blocks} trace blocks");
}

#[test]
fn inst_keeps_the_word_text_and_its_column() {
    let t = parse(
        "  inst tpb3 DIRECT2D semaphore=1 src_step_elem=[1, 4096]   # a comment\n",
        "t.trace",
    )
    .unwrap();
    let s = &t.statements[0];
    assert_eq!(
        s.kind,
        StatementKind::Inst {
            core: 3,
            text: "DIRECT2D semaphore=1 src_step_elem=[1, 4096]".into(),
            text_column: 13,
        }
    );
    assert_eq!((s.span.line, s.span.column), (1, 3));
    assert_eq!(
        s.kind.to_string(),
        "inst tpb3 DIRECT2D semaphore=1 src_step_elem=[1, 4096]"
    );
    // `instant` is not `inst`.
    assert!(parse("instant tpb0 X\n", "t.trace").is_err());
}

#[test]
fn inst_errors_name_the_core_and_the_missing_word() {
    let cases = [
        ("inst\n", 1, "inst needs a core and an instruction"),
        (
            "inst tpb8 DIRECT2D\n",
            6,
            "`tpb8` is not a core (expected tpb0 … tpb7)",
        ),
        ("inst eng0 DIRECT2D\n", 6, "`eng0` is not a core"),
        ("inst tpb01 DIRECT2D\n", 6, "`tpb01` is not a core"),
        (
            "inst tpb0   # nothing\n",
            6,
            "inst tpb0: the instruction is missing",
        ),
    ];
    for (src, column, msg) in cases {
        let e = parse(src, "t.trace").unwrap_err();
        assert_eq!(e.len(), 1, "{src:?}: {e:?}");
        assert_eq!((e[0].line, e[0].column), (1, column), "{src:?}: {e:?}");
        assert!(e[0].message.contains(msg), "{src:?}: {}", e[0].message);
    }
}

#[test]
fn memcpy_and_memcpy_method_parse_and_print_back() {
    let k = one("memcpy tpb2 local=0x80400 hbm=hbm0+0x1000 len=70000 read\n");
    assert_eq!(
        k,
        StatementKind::Memcpy {
            core: 2,
            local: 0x80400,
            hbm: addr("hbm0+0x1000"),
            len: 70000,
            is_read: true,
        }
    );
    assert_eq!(one(&format!("{k}\n")), k);
    let m = one("memcpy_method tpb7 3\n");
    assert_eq!(m, StatementKind::MemcpyMethod { core: 7, method: 3 });
    assert_eq!(one(&format!("{m}\n")), m);
    for (src, msg) in [
        (
            "memcpy tpb0 local=0x80000 hbm=0x0 len=4\n",
            "memcpy needs a direction",
        ),
        (
            "memcpy tpb0 local=0x80000 hbm=0x0 len=4 read write\n",
            "one direction",
        ),
        ("memcpy tpb9 local=0x80000 hbm=0x0 len=4 read\n", "tpb9"),
        ("memcpy_method tpb0 256\n", "256"),
    ] {
        let e = parse(src, "t.trace").unwrap_err();
        assert!(e[0].message.contains(msg), "{src:?}: {}", e[0].message);
    }
}

#[test]
fn icache_directives_parse_and_print_back() {
    let k = one("icache_init tpb3 block_size=0x1000\n");
    assert_eq!(
        k,
        StatementKind::IcacheInit {
            core: 3,
            block_size: 0x1000
        }
    );
    assert_eq!(one(&format!("{k}\n")), k);
    let f = one("icache_fill tpb3 fetch=hbm0+0x73000000 lines=3\n");
    assert_eq!(
        f,
        StatementKind::IcacheFill {
            core: 3,
            fetch: addr("hbm0+0x73000000"),
            lines: 3
        }
    );
    assert_eq!(one(&format!("{f}\n")), f);
    let e = parse("icache_fill tpb0 fetch=0x0 lines=32\n", "t.trace").unwrap_err();
    assert!(e[0].message.contains("lines"), "{}", e[0].message);
}

#[test]
fn inst_stream_names_a_core_and_a_file() {
    let t = parse(
        "inst_stream tpb2 file=\"kernels/k 1.bin\"   # a comment\n",
        "t.trace",
    )
    .unwrap();
    let s = &t.statements[0];
    let StatementKind::InstStream { core, path } = &s.kind else {
        panic!("{:?}", s.kind);
    };
    assert_eq!(*core, 2);
    assert_eq!(path.path, "kernels/k 1.bin");
    assert_eq!((path.span.line, path.span.column), (1, 23));
    assert_eq!(s.kind.directive(), "inst_stream");
    assert_eq!(
        s.kind.to_string(),
        "inst_stream tpb2 file=\"kernels/k 1.bin\""
    );
    // Printed text parses back to the same statement.
    let mut again = parse(&t.to_string(), "printed").unwrap();
    let mut t = t;
    t.clear_spans();
    again.clear_spans();
    assert_eq!(t, again);
    // `inst_stream` is not an `inst` line.
    assert!(parse("inst_stream tpb0 DIRECT2D\n", "t.trace").is_err());
}

#[test]
fn inst_stream_errors() {
    let cases = [
        ("inst_stream tpb0\n", "file"),
        ("inst_stream file=k.bin\n", "core"),
        ("inst_stream tpb8 file=k.bin\n", "tpb8"),
        ("inst_stream tpb0 file=k.bin len=64\n", "len"),
    ];
    for (text, needle) in cases {
        let e = parse(text, "t.trace").unwrap_err();
        let msg = e[0].to_string();
        assert!(msg.starts_with("t.trace:1:"), "{text}: {msg}");
        assert!(msg.contains(needle), "{text}: {msg}");
    }
}
