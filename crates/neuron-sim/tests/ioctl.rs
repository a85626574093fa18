//! `neuron-sim ioctl list|decode`: the ioctl ABI listing.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .output()
        .unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let o = run(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn list_json_has_every_ioctl_with_the_required_keys() {
    let v = json(&["ioctl", "list", "--json"]);
    let rows = v["ioctls"].as_array().unwrap();
    assert!(rows.len() >= 40, "{} rows", rows.len());
    for r in rows {
        for key in ["name", "dir", "nr", "size", "value"] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
        let value = r["value"].as_str().unwrap();
        assert!(
            value.starts_with("0x") && value == value.to_lowercase(),
            "{value}"
        );
    }
    let find = |v: &str| rows.iter().find(|r| r["value"] == v).unwrap();

    // The numbers tdrv-dmem issues, under the driver's names.
    let alloc = find("0x80384e66");
    assert_eq!(alloc["name"], "MEM_ALLOC_V2MT64");
    assert_eq!(alloc["dir"], "R");
    assert_eq!(alloc["nr"], 102);
    assert_eq!(alloc["size"], 56);
    assert_eq!(find("0x80084e19")["name"], "MEM_GET_PA");
    assert_eq!(find("0x80084e16")["name"], "MEM_FREE");
    let copy = find("0xc0384e6c");
    assert_eq!(copy["name"], "MEM_COPY_ASYNC64");
    assert_eq!(copy["dir"], "RW");
    assert_eq!(copy["aliases"][0]["name"], "MEM_COPY_ASYNC");
    assert_eq!(find("0xc0304e6c")["name"], "MEM_COPY_ASYNC");
    let batch = find("0xc0204e81");
    assert_eq!(batch["name"], "MEM_BUF_ZEROCOPY64_BATCHES");
    assert_eq!(batch["size"], 32);

    // A pointer-declared ioctl: encoded size 8, struct copied whole.
    let q = find("0x80084e21");
    assert_eq!(q["name"], "DMA_QUEUE_INIT");
    assert_eq!(q["size"], 8);
    assert_eq!(q["struct_size"], 48);
    assert_eq!(q["size_from"], "pointer");

    let names: Vec<_> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for name in [
        "MEM_ALLOC_V2",
        "MEM_ALLOC_V2MT",
        "MEM_GET_INFO",
        "MEM_GET_EXTENDED_INFO",
        "MEM_COPY64",
        "MEM_COPY64_DEPRECATED",
        "MEM_COPY_ASYNC_WAIT",
        "MEM_BUF_COPY",
        "MEM_BUF_COPY64",
        "MEM_BUF_ZEROCOPY64",
        "MEMSET64",
        "DMA_QUEUE_COPY_START",
        "DMA_ACK_COMPLETED",
        "DMA_ENG_SET_STATE",
        "DMA_ENG_GET_STATE",
        "DMA_QUEUE_GET_STATE",
        "DMA_COPY_DESCRIPTORS64",
        "DMA_DESCRIPTOR_COPYOUT",
        "SEMAPHORE_READ",
        "SEMAPHORE_WRITE",
        "SEMAPHORE_INCREMENT",
        "SEMAPHORE_DECREMENT",
        "EVENT_GET",
        "EVENT_SET",
    ] {
        assert!(names.contains(&name), "{name} not listed");
    }
}

#[test]
fn list_text_prints_one_line_per_ioctl() {
    let o = run(&["ioctl", "list"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    let rows = json(&["ioctl", "list", "--json"]);
    assert_eq!(
        text.lines().count(),
        rows["ioctls"].as_array().unwrap().len() + 1
    );
    let line = text.lines().find(|l| l.starts_with("0x80384E66")).unwrap();
    assert!(line.contains("MEM_ALLOC_V2MT64"), "{line}");
    assert!(line.contains("MEM_ALLOC (tdrv-dmem)"), "{line}");
}

#[test]
fn decode_names_known_numbers_and_explains_unknown_ones() {
    let v = json(&["ioctl", "decode", "0xC0204E81", "--json"]);
    assert_eq!(v["decoded"]["dir"], "RW");
    assert_eq!(v["decoded"]["nr"], 129);
    assert_eq!(v["decoded"]["size"], 32);
    assert_eq!(v["ioctl"]["name"], "MEM_BUF_ZEROCOPY64_BATCHES");

    let v = json(&["ioctl", "decode", "0x80084EFF", "--json"]);
    assert!(v["ioctl"].is_null());
    assert_eq!(v["error"], "ENOTTY");

    let o = run(&["ioctl", "decode", "0x80384E66"]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.starts_with("0x80384E66: _IOR('N', 102, 56 bytes)"),
        "{text}"
    );

    let o = run(&["ioctl", "decode", "0x100000000"]);
    assert_eq!(o.status.code(), Some(2));
}
