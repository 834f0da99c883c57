//! The real Wireshark GUI with the dissector, once: Wireshark 4.4 (Debian 13's, in the chroot
//! `.ci/trixie-chroot` builds, run as `nobody`: 4.4 loads no Lua plugin as root) on a virtual X
//! server (`xvfb-run`), the dissector installed as wireshark/README.md says (copied into the
//! personal plugin folder), opening the real 17-byte capture at the frame that completes a chunk
//! set, with the build's profile chosen by the preference. The test checks the window's title,
//! that no Lua error dialog appeared and that nothing went wrong on stderr, that tshark lists the
//! plugin from that folder, that Statistics → R-Type opens its window, and that the packet list's
//! context menu R-Type → Follow R-Type entity on frame 523 (the spawn of entity 68) applies
//! exactly `rtype.entity.id == 68` (the display filter history Wireshark writes on quitting) and
//! displays the packets `rtype-inspect packets -Y` lists, the very file tshark 4.4 writes with that
//! filter (File → Export Specified Packets, the displayed ones); it keeps screenshots
//! (ImageMagick's `import`) in target/tmp/wireshark_gui/. `RTYPE_BLESS=1` also writes the small copy wireshark/README.md shows
//! (wireshark/screenshot-4.4.png).
//!
//! 4.4 rather than the host's 4.0: it is what users run (Debian 13, Ubuntu 24.04+, the Windows and
//! macOS installers are 4.4 or later), it embeds Lua 5.4, and its rules for loading plugins are
//! the ones README must get right; 4.0 is proven by tshark, the same dissection engine.

#[path = "support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn trixie_root() -> PathBuf {
    std::env::var_os("RTYPE_TRIXIE_ROOT").map_or_else(
        || PathBuf::from("/var/cache/rtype-inspect/trixie"),
        PathBuf::from,
    )
}

/// Why the test cannot run here, if it cannot.
fn missing() -> Option<String> {
    let chroot = trixie_root();
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    if uid.trim_ascii() != b"0" {
        return Some("running Wireshark in the chroot needs root (chroot, chown)".into());
    }
    if !chroot.join("usr/bin/wireshark").exists() {
        return Some(format!(
            "no Wireshark 4.4 in a chroot at {}",
            chroot.display()
        ));
    }
    for tool in ["xvfb-run", "import", "xwininfo", "xdotool"] {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {tool}"))
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("{tool} is not installed (.ci/run installs it)"));
        }
    }
    None
}

fn make_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Makes `dir` and its files `nobody`'s, for Wireshark running as nobody in the chroot.
fn give_to_nobody(dir: &Path) {
    let status = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// The number of records of a little-endian pcap file (microsecond or nanosecond), if it is one.
fn pcap_records(file: &[u8]) -> Option<usize> {
    let magic = file.get(..4)?;
    if magic != [0xd4, 0xc3, 0xb2, 0xa1] && magic != [0x4d, 0x3c, 0xb2, 0xa1] {
        return None;
    }
    let (mut at, mut records) = (24, 0);
    while at < file.len() {
        let length = u32::from_le_bytes(file.get(at + 8..at + 12)?.try_into().ok()?);
        at += 16 + length as usize;
        records += 1;
    }
    (at == file.len()).then_some(records)
}

#[test]
fn wireshark_4_4_shows_a_reassembled_snapshot() {
    if let Some(why) = missing() {
        if std::env::var_os("RTYPE_REQUIRE_TSHARK_4_4").is_some() {
            panic!("the Wireshark GUI test is required (RTYPE_REQUIRE_TSHARK_4_4) but {why}");
        }
        skip::missing("wireshark_4_4_shows_a_reassembled_snapshot", &why);
        return;
    }
    // A home for nobody inside the chroot: the dissector in the personal plugin folder, as
    // wireshark/README.md installs it, and the window's size and panes.
    let name = format!("rtype-inspect-gui-{}", std::process::id());
    let home_inside = format!("/tmp/{name}");
    let home = trixie_root().join("tmp").join(&name);
    let _ = std::fs::remove_dir_all(&home);
    let plugins = home.join(".local/lib/wireshark/plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(
        root().join("wireshark/rtype.lua"),
        plugins.join("rtype.lua"),
    )
    .unwrap();
    let config = home.join(".config/wireshark");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("recent_common"),
        "gui.geometry_main_x: 0\ngui.geometry_main_y: 0\ngui.geometry_main_width: 1280\n\
         gui.geometry_main_height: 800\ngui.geometry_main_maximized: FALSE\n",
    )
    .unwrap();
    std::fs::write(
        config.join("recent"),
        "gui.geometry_main_upper_pane: 150\ngui.geometry_main_lower_pane: 470\n",
    )
    .unwrap();
    let capture = "reference-17byte-1client.pcap";
    std::fs::copy(
        root().join("tests/fixtures").join(capture),
        home.join(capture),
    )
    .unwrap();
    make_mode(&home, 0o755);
    give_to_nobody(&home);

    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("wireshark_gui");
    std::fs::create_dir_all(&out_dir).unwrap();
    let screenshot = out_dir.join("rtype-4.4.png");
    let statistics = out_dir.join("rtype-4.4-statistics.png");
    let follow_menu = out_dir.join("rtype-4.4-follow-menu.png");
    let follow = out_dir.join("rtype-4.4-follow.png");
    for shot in [&screenshot, &statistics, &follow_menu, &follow] {
        let _ = std::fs::remove_file(shot);
    }
    let env = format!(
        "env -i HOME={home_inside} PATH=/usr/bin:/bin DISPLAY=$DISPLAY XDG_RUNTIME_DIR={home_inside} LANG=C.UTF-8"
    );
    // In the virtual display: start Wireshark at frame 558 (the second chunk of a set, which
    // completes it) with the capture's profile, wait for its window, open the R-Type tree (a click
    // on its line, Shift+Right expands its subtrees), list the windows, take the screenshot.
    let script = format!(
        r#"
chroot --userspec=65534:65534 {chroot} {env} wireshark -r {home_inside}/{capture} -g 558 \
    -o rtype.profile:reference-17byte -o gui.layout_type:1 2> {home}/stderr.txt &
pid=$!
for i in $(seq 1 90); do
  sleep 1
  xwininfo -root -tree 2>/dev/null | grep -q '"{capture}"' && break
done
sleep 3
xdotool mousemove 200 304 click 1
sleep 1
xdotool key shift+Right
sleep 2
echo "WINDOWS"
xwininfo -root -tree | grep -E '^ +0x[0-9a-f]+ "'
import -window root {screenshot}
# Statistics > R-Type (the menu's entry at this place in Debian 13's Wireshark 4.4).
xdotool mousemove 307 8 click 1
sleep 1
xdotool mousemove 324 273 click 1
sleep 2
echo "STATISTICS"
xwininfo -root -tree | grep -E '^ +0x[0-9a-f]+ "'
import -window root {statistics}
# Follow R-Type entity: close the statistics window, go to frame 523 (Ctrl+G in the packet list),
# the spawn of entity 68, open the packet list's context menu at it (the Menu key), R-Type (its
# sixth entry) → Follow R-Type entity (rtype.entity.id).
xdotool mousemove 888 561 click 1
sleep 1
xdotool mousemove 100 200 click 1
sleep 0.5
xdotool key ctrl+g
sleep 0.5
xdotool type 523
xdotool key Return
sleep 1
xdotool key Menu
sleep 1
xdotool key Down Down Down Down Down Down Right
sleep 1
import -window root {follow_menu}
xdotool key Return
sleep 2
echo "FOLLOW"
xwininfo -root -tree | grep -E '^ +0x[0-9a-f]+ "'
import -window root {follow}
# File → Export Specified Packets, which exports the displayed packets (the dialog's default).
xdotool mousemove 20 8 click 1
sleep 1
xdotool mousemove 110 211 click 1
for i in $(seq 1 20); do
  sleep 0.5
  xwininfo -root -tree | grep -q 'Export Specified Packets' && break
done
sleep 0.5
xdotool type --delay 10 {home_inside}/followed.pcap
xdotool key Return
for i in $(seq 1 20); do
  sleep 0.5
  test -s {home}/followed.pcap && break
done
# Quit (Ctrl+Q in the packet list), which writes the display filter history to recent_common.
sleep 1
xdotool mousemove 100 112 click 1
sleep 0.5
xdotool key ctrl+q
for i in $(seq 1 20); do
  kill -0 $pid 2>/dev/null || break
  sleep 0.5
done
kill $pid 2>/dev/null
wait $pid
true
"#,
        chroot = trixie_root().display(),
        home = home.display(),
        screenshot = screenshot.display(),
        statistics = statistics.display(),
        follow_menu = follow_menu.display(),
        follow = follow.display(),
    );
    // xvfb-run -a picks a free display; when another one starts on it meanwhile (tests of other
    // programs on this machine), Wireshark cannot connect: one more try on another.
    let (stdout, stderr) = (0..2)
        .map(|_| {
            let out = Command::new("xvfb-run")
                .args([
                    "-a",
                    "-s",
                    "-screen 0 1280x800x24 -ac",
                    "bash",
                    "-c",
                    &script,
                ])
                .output()
                .expect("xvfb-run runs");
            assert!(
                out.status.success(),
                "xvfb-run: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = std::fs::read_to_string(home.join("stderr.txt")).unwrap_or_default();
            (stdout, stderr)
        })
        .find(|(_, stderr)| !stderr.contains("could not connect to display"))
        .expect("Wireshark could not connect to the virtual display, twice");
    // Wireshark's top-level windows (with a WM_CLASS): xwininfo's `0x... "title": ("wireshark"
    // "Wireshark") ...` lines.
    let windows_of = |part: &str| -> Vec<String> {
        part.lines()
            .filter(|l| l.contains("(\"wireshark\" \"Wireshark\")"))
            .filter_map(|l| l.split('"').nth(1).map(str::to_string))
            .collect()
    };
    let (first, later) = stdout
        .split_once("WINDOWS")
        .and_then(|(_, rest)| rest.split_once("STATISTICS"))
        .unwrap_or(("", ""));
    let (later, followed) = later.split_once("FOLLOW").unwrap_or((later, ""));
    let windows = windows_of(first);
    // One: the main window, titled by the capture file. A Lua error while loading the plugin
    // opens a dialog (and keeps the capture closed: the title would be "The Wireshark Network
    // Analyzer").
    assert_eq!(windows, [capture], "Wireshark's windows; stderr:\n{stderr}");
    // Statistics > R-Type opens its text window.
    let windows = windows_of(later);
    assert!(
        windows.iter().any(|w| w.ends_with("R-Type statistics")),
        "no R-Type statistics window after Statistics > R-Type (windows {windows:?}; see {})",
        statistics.display()
    );
    // Follow R-Type entity closed no window and opened none (a Lua error opens a dialog).
    assert_eq!(
        windows_of(followed),
        [capture],
        "Wireshark's windows after Follow R-Type entity (see {})",
        follow.display()
    );
    // The filter it applied, exactly: the display filter history Wireshark wrote on quitting
    // (one line, the profile being new).
    let recent = std::fs::read_to_string(config.join("recent_common")).unwrap_or_default();
    let filters: Vec<&str> = recent
        .lines()
        .filter_map(|l| l.strip_prefix("recent.display_filter:"))
        .map(str::trim)
        .collect();
    assert_eq!(
        filters,
        ["rtype.entity.id == 68"],
        "the display filters applied (recent_common; see {} and {}); stderr:\n{stderr}",
        follow_menu.display(),
        follow.display()
    );
    // The packets it displayed, as File → Export Specified Packets wrote them: those
    // `rtype-inspect packets -Y` lists, and the very file tshark 4.4 writes with the filter.
    let exported = std::fs::read(home.join("followed.pcap")).unwrap_or_default();
    let listed = Command::new(env!("CARGO_BIN_EXE_rtype-inspect"))
        .arg("packets")
        .arg(root().join("tests/fixtures").join(capture))
        .args([
            "-Y",
            "rtype.entity.id == 68",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .unwrap();
    assert!(listed.status.success());
    let listed = String::from_utf8_lossy(&listed.stdout).lines().count();
    assert_eq!(
        listed, 497,
        "frames naming entity 68 (rtype-inspect packets -Y)"
    );
    assert_eq!(
        pcap_records(&exported),
        Some(listed),
        "packets displayed after Follow R-Type entity (exported to {}; see {})",
        home.join("followed.pcap").display(),
        follow.display()
    );
    let tshark = Command::new("chroot")
        .arg("--userspec=65534:65534")
        .arg(trixie_root())
        .args(["/usr/bin/env", "-i", "PATH=/usr/bin:/bin"])
        .arg(format!("HOME={home_inside}"))
        .arg("tshark")
        .arg("-r")
        .arg(format!("{home_inside}/{capture}"))
        .args(["-o", "rtype.profile:reference-17byte"])
        .args(["-Y", "rtype.entity.id == 68", "-F", "pcap", "-w"])
        .arg(format!("{home_inside}/tshark.pcap"))
        .status()
        .unwrap();
    assert!(tshark.success());
    assert!(
        std::fs::read(home.join("tshark.pcap")).unwrap() == exported,
        "the packets Wireshark displayed are not those tshark -Y 'rtype.entity.id == 68' writes"
    );
    for line in stderr.lines() {
        assert!(
            !line.contains("Lua") && !line.contains("rtype"),
            "Wireshark's stderr: {line}"
        );
    }
    // The screenshot: the whole screen, many colours (a drawn window, not a blank one).
    let colours = Command::new("identify")
        .args(["-format", "%k"])
        .arg(&screenshot)
        .output()
        .expect("identify runs");
    let colours: u32 = String::from_utf8_lossy(&colours.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    assert!(colours > 50, "{}: {colours} colours", screenshot.display());
    eprintln!(
        "screenshots: {}, {}, {}, {}",
        screenshot.display(),
        statistics.display(),
        follow_menu.display(),
        follow.display()
    );

    // The plugin is loaded from that folder: tshark 4.4 with the same home lists it.
    let plugins = Command::new("chroot")
        .arg("--userspec=65534:65534")
        .arg(trixie_root())
        .args(["/usr/bin/env", "-i", "PATH=/usr/bin:/bin"])
        .arg(format!("HOME={home_inside}"))
        .args(["tshark", "-G", "plugins"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&plugins.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.contains("rtype.lua") && l.contains("lua script")),
        "tshark -G plugins:\n{listed}"
    );

    if std::env::var_os("RTYPE_BLESS").is_some() {
        let small = root().join("wireshark/screenshot-4.4.png");
        let status = Command::new("convert")
            .arg(&screenshot)
            .args(["-colors", "64", "-strip"])
            .arg(format!("png8:{}", small.display()))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let _ = std::fs::remove_dir_all(&home);
}
