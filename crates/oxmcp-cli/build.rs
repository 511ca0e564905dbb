//! Link flags of the `oxmcp` binary.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The functions one start runs, as callgrind's output lists them (grouped by object and
/// source file; `scripts/startup-order.py` writes it).
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
    // The code a start runs, laid out together: a start then maps about 1 MB of the binary's
    // code instead of 9 MB scattered over its 25 MB (the kernel maps 64 KiB around each page
    // it faults in). A name the binary does not have (the file is older than the code, or
    // another build configuration mangles differently) is skipped: at worst the layout is the
    // linker's own, as without the file.
    if let Some(order) = ordering_file()
        && links_with(&order)
    {
        for arg in order_args(&order) {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={ORDER_FILE}");
    println!("cargo:rerun-if-env-changed={OPT_OUT}");
}

/// The order file, for a release build for x86_64 Linux (GNU) on such a host, unless opted
/// out of. Whether the linker takes it is [`links_with`]'s to find out.
fn ordering_file() -> Option<PathBuf> {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if std::env::var_os(OPT_OUT).is_some() || var("PROFILE") != "release" {
        return None;
    }
    if var("TARGET") != "x86_64-unknown-linux-gnu" || var("HOST") != var("TARGET") {
        return None;
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join(ORDER_FILE);
    // A path that is not UTF-8 would not reach the linker as it is.
    (order.is_file() && order.to_str().is_some()).then_some(order)
}

/// The link arguments that hand `order` to the linker (through the C compiler, which passes
/// `-Xlinker`'s next argument on whole, commas included).
fn order_args(order: &Path) -> [String; 4] {
    [
        "-Xlinker".into(),
        format!("--symbol-ordering-file={}", order.display()),
        "-Xlinker".into(),
        "--no-warn-symbol-ordering".into(),
    ]
}

/// Whether this build's linker takes `--symbol-ordering-file`: rustc's own lld does (the
/// default of rustup's x86_64 Linux toolchains since Rust 1.90), GNU ld, gold and mold do not.
/// Found out by linking an empty program the way the binary will be linked: this rustc, the
/// build's flags and its configured linker, and the two arguments.
fn links_with(order: &Path) -> bool {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("order_probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut probe = Command::new(rustc);
    probe
        .arg(&source)
        .arg("--crate-type=bin")
        .arg("-o")
        .arg(out.join("order_probe"));
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    probe.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        probe
            .arg("-C")
            .arg(format!("linker={}", linker.to_string_lossy()));
    }
    for arg in order_args(order) {
        probe.arg(format!("-Clink-arg={arg}"));
    }
    probe
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
