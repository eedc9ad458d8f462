//! The guest agent's results travel over a serial line as text lines
//! `BPFVET <kind> <length> <payload>`: the length (payload bytes) tells a
//! whole line from one the console cut or mixed with other output, which
//! the reader skips.

const MAGIC: &str = "BPFVET";

/// One message of the agent: its kind (`hello`, `row`, `done`...) and a
/// one-line payload (JSON for this project's agent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub kind: String,
    pub payload: String,
}

/// The line that carries `kind` and `payload`. Newlines in the payload
/// would end the line early; callers send single-line JSON.
pub fn encode(kind: &str, payload: &str) -> String {
    debug_assert!(!kind.contains(' ') && !payload.contains('\n'));
    format!("{MAGIC} {kind} {} {payload}\n", payload.len())
}

/// Splits a byte stream into frames, whatever the chunks it arrives in.
#[derive(Default)]
pub struct Reader {
    pending: Vec<u8>,
    /// Lines that started like a frame but were not whole.
    pub damaged: usize,
}

impl Reader {
    pub fn new() -> Reader {
        Reader::default()
    }

    /// The frames completed by `bytes`, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Frame> {
        self.pending.extend_from_slice(bytes);
        let mut frames = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            // A tty may turn "\n" into "\r\n".
            let line = line.trim_end_matches(['\n', '\r']);
            let Some(at) = line.find(MAGIC) else {
                continue;
            };
            match parse(&line[at..]) {
                Some(f) => frames.push(f),
                None => self.damaged += 1,
            }
        }
        frames
    }
}

fn parse(line: &str) -> Option<Frame> {
    let rest = line.strip_prefix(MAGIC)?.strip_prefix(' ')?;
    let (kind, rest) = rest.split_once(' ')?;
    let (len, payload) = rest.split_once(' ').unwrap_or((rest, ""));
    let len: usize = len.parse().ok()?;
    (payload.len() == len && !kind.is_empty()).then(|| Frame {
        kind: kind.to_string(),
        payload: payload.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_survive_any_chunking_and_crlf() {
        let stream = format!(
            "[    1.2] boot noise\r\n{}{}",
            encode("row", r#"{"prog":"a b"}"#).replace('\n', "\r\n"),
            encode("done", "")
        );
        let want = vec![
            Frame {
                kind: "row".into(),
                payload: r#"{"prog":"a b"}"#.into(),
            },
            Frame {
                kind: "done".into(),
                payload: String::new(),
            },
        ];
        for chunk in [1, 3, 7, stream.len()] {
            let mut r = Reader::new();
            let mut got = Vec::new();
            for part in stream.as_bytes().chunks(chunk) {
                got.extend(r.push(part));
            }
            assert_eq!(got, want, "chunks of {chunk}");
            assert_eq!(r.damaged, 0);
        }
    }

    #[test]
    fn a_cut_or_interleaved_line_is_counted_not_returned() {
        let mut r = Reader::new();
        let whole = encode("row", "{\"x\":1}");
        let cut = format!("{}[ 3.1] Oops{}", &whole[..12], &whole[12..]);
        assert!(r.push(cut.as_bytes()).is_empty());
        assert!(r.push(b"BPFVET row 99 {}\n").is_empty());
        assert!(r.push(b"BPFVET row\n").is_empty());
        assert_eq!(r.damaged, 3);
        // Text before the magic on the same line (a console prefix) is fine.
        let f = r.push(format!("junk {whole}").as_bytes());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].payload, "{\"x\":1}");
    }

    #[test]
    fn an_unfinished_line_waits_for_its_end() {
        let mut r = Reader::new();
        let whole = encode("hello", "6.18");
        assert!(r.push(&whole.as_bytes()[..whole.len() - 1]).is_empty());
        assert_eq!(r.push(b"\n").len(), 1);
    }
}
