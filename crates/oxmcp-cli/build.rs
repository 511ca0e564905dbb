//! Link flags of the `oxmcp` binary.

use std::path::Path;
use std::process::Command;

/// The functions a start runs, in the order callgrind first saw them
/// (`scripts/startup-order.py` writes it).
const ORDER_FILE: &str = "startup-order.txt";
/// Set (to anything) to link without [`ORDER_FILE`].
const OPT_OUT: &str = "OXMCP_NO_SYMBOL_ORDERING";

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // Packed relative relocations (DT_RELR, glibc 2.36+): the binary's ~50,000 relative
    // relocations take a few KiB instead of 1.2 MB that the dynamic loader reads at every
    // start. A linker that does not know the flag warns and ignores it.
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    if lld_links_release() {
        // The code a start runs, laid out together: a start then maps about 1 MB of the
        // binary's code instead of 9 MB scattered over its 25 MB (the kernel maps 64 KiB
        // around each page it faults in). A name the binary does not have (the file is
        // older than the code, or another build configuration mangles differently) is
        // skipped: at worst the layout is the linker's own, as without the file.
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let order = Path::new(&dir).join(ORDER_FILE);
        if order.is_file() {
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={ORDER_FILE}");
    println!("cargo:rerun-if-env-changed={OPT_OUT}");
}

/// Whether this is a release build that rustc links with its own lld: x86_64 Linux (GNU)
/// since Rust 1.90, with no linker of the user's own choosing. GNU ld does not know
/// `--symbol-ordering-file`, so anything else links as before.
fn lld_links_release() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if std::env::var_os(OPT_OUT).is_some() || var("PROFILE") != "release" {
        return false;
    }
    if var("TARGET") != "x86_64-unknown-linux-gnu" || var("HOST") != var("TARGET") {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if flags.contains("linker") || flags.contains("link-self-contained") {
        return false;
    }
    if std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some() {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let minor = text
        .lines()
        .find_map(|l| l.strip_prefix("release: "))
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    matches!(minor, Some(m) if m >= 90)
}
