//! The generated sections of `docs/ioctl-abi.md` (the ioctl table and the
//! struct layouts) must match what the crate renders from its data.
//!
//! To regenerate: `IOCTL_ABI_BLESS=1 cargo test -p ioctl-abi --test docs_fresh`.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use ioctl_abi::listing::{DOC_SECTIONS, refresh_doc};

#[test]
fn ioctl_abi_doc_is_fresh() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/ioctl-abi.md");
    let on_disk = std::fs::read_to_string(&path).unwrap();
    for (name, _) in DOC_SECTIONS {
        assert!(
            on_disk.contains(&format!("<!-- BEGIN GENERATED: {name} -->\n"))
                && on_disk.contains(&format!("<!-- END GENERATED: {name} -->")),
            "docs/ioctl-abi.md lacks the generated section {name}"
        );
    }
    let fresh = refresh_doc(&on_disk);
    if fresh != on_disk && std::env::var_os("IOCTL_ABI_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    assert!(
        fresh == on_disk,
        "docs/ioctl-abi.md is stale: run `IOCTL_ABI_BLESS=1 cargo test -p ioctl-abi --test docs_fresh`"
    );
}
