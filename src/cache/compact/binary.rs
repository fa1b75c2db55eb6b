//! The compact form in bytes, as snapshot files hold it
//! ([`crate::informer::snapshot`]): reading one back builds the compact object
//! directly, with no JSON to parse and no `DynamicObject` in between.
//!
//! A stream of records, each a tag byte, a length (LEB128) and a payload.
//! Keys and shared `fieldsV1` trees are written once, in a record of their
//! own before the first object that uses them, and referred to by number
//! (in the order written) after that; an object's record holds its type
//! fields, metadata and data.

use super::*;

/// A record defining the next key.
pub(crate) const KEY: u8 = b'k';
/// A record defining the next shared tree.
pub(crate) const TREE: u8 = b't';
/// A record holding an object.
pub(crate) const OBJECT: u8 = b'o';

/// The deepest value read back: as deep as the objects decoded from the
/// wire can be.
const MAX_DEPTH: usize = crate::wire::MAX_OBJECT_DEPTH;

// Node tags.
const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const UNSIGNED: u8 = 3;
const SIGNED: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const MAP: u8 = 8;

/// Appends one record.
pub(crate) fn write_record(out: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    out.push(tag);
    write_len(out, payload.len());
    out.extend_from_slice(payload);
}

fn write_len(out: &mut Vec<u8>, n: usize) {
    write_varint(out, n as u64);
}

fn write_varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Reads a number [`write_varint`] wrote, a byte at a time from `next`.
pub(crate) fn read_varint(mut next: impl FnMut() -> Result<u8, String>) -> Result<u64, String> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = next()?;
        n |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(n);
        }
    }
    Err("a number is longer than 64 bits".to_owned())
}

/// Writes compact objects as records, each key and tree defined once.
#[derive(Default)]
pub(crate) struct Encoder {
    keys: HashMap<Key, u64>,
    /// By address; the `Arc` held keeps the address from being reused by
    /// another tree while this encoder lives.
    trees: HashMap<usize, (u64, Arc<Node>)>,
    object: Vec<u8>,
    tree: Vec<u8>,
}

impl Encoder {
    /// Appends to `out` the records of `object`: the keys and trees it is
    /// the first to use, then the object.
    pub(crate) fn object(&mut self, object: &CompactObject, out: &mut Vec<u8>) {
        let mut body = std::mem::take(&mut self.object);
        body.clear();
        match &object.types {
            Some((api_version, kind)) => {
                body.push(1);
                self.key(api_version, &mut body, out);
                self.key(kind, &mut body, out);
            }
            None => body.push(0),
        }
        self.meta(&object.meta, &mut body, out);
        self.node(&object.data, &mut body, out);
        write_record(out, OBJECT, &body);
        self.object = body;
    }

    /// Refers to `key` in `body`, defining it in `out` first if it is new.
    fn key(&mut self, key: &Key, body: &mut Vec<u8>, out: &mut Vec<u8>) {
        let next = self.keys.len() as u64;
        let id = *self.keys.entry(Arc::clone(key)).or_insert_with(|| {
            write_record(out, KEY, key.as_bytes());
            next
        });
        write_varint(body, id);
    }

    fn opt_key(&mut self, key: Option<&Key>, body: &mut Vec<u8>, out: &mut Vec<u8>) {
        match key {
            Some(key) => {
                body.push(1);
                self.key(key, body, out);
            }
            None => body.push(0),
        }
    }

    fn node(&mut self, node: &Node, body: &mut Vec<u8>, out: &mut Vec<u8>) {
        match node {
            Node::Null => body.push(NULL),
            Node::Bool(false) => body.push(FALSE),
            Node::Bool(true) => body.push(TRUE),
            Node::Number(n) => write_number(body, n),
            Node::String(s) => {
                body.push(STRING);
                write_str(body, s.as_str());
            }
            Node::Array(items) => {
                body.push(ARRAY);
                write_len(body, items.len());
                for item in items.iter() {
                    self.node(item, body, out);
                }
            }
            Node::Object(entries) => {
                body.push(MAP);
                write_len(body, entries.len());
                for (k, v) in entries.iter() {
                    self.key(k, body, out);
                    self.node(v, body, out);
                }
            }
        }
    }

    /// Refers to a shared tree, defining it in `out` first if it is new.
    fn tree(&mut self, tree: &Arc<Node>, body: &mut Vec<u8>, out: &mut Vec<u8>) {
        let address = Arc::as_ptr(tree) as usize;
        if let Some((id, _)) = self.trees.get(&address) {
            write_varint(body, *id);
            return;
        }
        let mut payload = std::mem::take(&mut self.tree);
        payload.clear();
        self.node(tree, &mut payload, out);
        write_record(out, TREE, &payload);
        self.tree = payload;
        let id = self.trees.len() as u64;
        self.trees.insert(address, (id, Arc::clone(tree)));
        write_varint(body, id);
    }

    fn meta(&mut self, m: &Meta, body: &mut Vec<u8>, out: &mut Vec<u8>) {
        write_opt_str(body, m.name.as_deref());
        self.opt_key(m.namespace.as_ref(), body, out);
        write_opt_str(body, m.uid.as_deref());
        write_opt_str(body, m.resource_version.as_deref());
        write_opt_i64(body, m.generation);
        write_opt_time(body, m.creation_timestamp.as_ref());
        self.pairs(m.labels.as_deref(), body, out, |e, v, body, out| {
            e.key(v, body, out);
        });
        self.pairs(m.annotations.as_deref(), body, out, |_, v, body, _| {
            write_str(body, v.as_str());
        });
        match m.managed_fields.as_deref() {
            Some(entries) => {
                body.push(1);
                write_len(body, entries.len());
                for e in entries {
                    self.opt_key(e.api_version.as_ref(), body, out);
                    self.opt_key(e.fields_type.as_ref(), body, out);
                    match &e.fields_v1 {
                        Some(tree) => {
                            body.push(1);
                            self.tree(tree, body, out);
                        }
                        None => body.push(0),
                    }
                    self.opt_key(e.manager.as_ref(), body, out);
                    self.opt_key(e.operation.as_ref(), body, out);
                    self.opt_key(e.subresource.as_ref(), body, out);
                    write_opt_time(body, e.time.as_ref());
                }
            }
            None => body.push(0),
        }
        match m.owner_references.as_deref() {
            Some(refs) => {
                body.push(1);
                write_len(body, refs.len());
                for r in refs {
                    self.key(&r.api_version, body, out);
                    self.key(&r.kind, body, out);
                    write_str(body, &r.name);
                    write_str(body, &r.uid);
                    write_opt_bool(body, r.block_owner_deletion);
                    write_opt_bool(body, r.controller);
                }
            }
            None => body.push(0),
        }
        match m.rare.as_deref() {
            Some(r) => {
                body.push(1);
                write_opt_i64(body, r.deletion_grace_period_seconds);
                write_opt_time(body, r.deletion_timestamp.as_ref());
                match &r.finalizers {
                    Some(finalizers) => {
                        body.push(1);
                        write_len(body, finalizers.len());
                        for f in finalizers {
                            write_str(body, f);
                        }
                    }
                    None => body.push(0),
                }
                write_opt_str(body, r.generate_name.as_deref());
                write_opt_str(body, r.self_link.as_deref());
            }
            None => body.push(0),
        }
    }

    /// Labels or annotations: presence, length, then each key and value.
    fn pairs<V>(
        &mut self,
        pairs: Option<&[(Key, V)]>,
        body: &mut Vec<u8>,
        out: &mut Vec<u8>,
        value: impl Fn(&mut Self, &V, &mut Vec<u8>, &mut Vec<u8>),
    ) {
        let Some(pairs) = pairs else {
            body.push(0);
            return;
        };
        body.push(1);
        write_len(body, pairs.len());
        for (k, v) in pairs {
            self.key(k, body, out);
            value(self, v, body, out);
        }
    }
}

fn write_number(body: &mut Vec<u8>, n: &Number) {
    if let Some(u) = n.as_u64() {
        body.push(UNSIGNED);
        body.extend_from_slice(&u.to_le_bytes());
    } else if let Some(i) = n.as_i64() {
        body.push(SIGNED);
        body.extend_from_slice(&i.to_le_bytes());
    } else {
        body.push(FLOAT);
        body.extend_from_slice(&n.as_f64().unwrap_or_default().to_le_bytes());
    }
}

fn write_str(body: &mut Vec<u8>, s: &str) {
    write_len(body, s.len());
    body.extend_from_slice(s.as_bytes());
}

fn write_opt_str(body: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            body.push(1);
            write_str(body, s);
        }
        None => body.push(0),
    }
}

fn write_opt_i64(body: &mut Vec<u8>, n: Option<i64>) {
    match n {
        Some(n) => {
            body.push(1);
            body.extend_from_slice(&n.to_le_bytes());
        }
        None => body.push(0),
    }
}

fn write_opt_bool(body: &mut Vec<u8>, b: Option<bool>) {
    body.push(match b {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    });
}

fn write_opt_time(body: &mut Vec<u8>, t: Option<&Time>) {
    match t {
        Some(Time(t)) => {
            body.push(1);
            body.extend_from_slice(&t.as_second().to_le_bytes());
            body.extend_from_slice(&t.subsec_nanosecond().to_le_bytes());
        }
        None => body.push(0),
    }
}

/// Reads records back into compact objects, sharing keys and trees through
/// its interner.
pub(crate) struct Decoder {
    interner: Interner,
    keys: Vec<Key>,
    trees: Vec<Arc<Node>>,
}

impl Decoder {
    /// A decoder that builds objects with `interner`.
    pub(crate) fn new(interner: Interner) -> Self {
        Self {
            interner,
            keys: Vec::new(),
            trees: Vec::new(),
        }
    }

    /// Reads one record: the object for an object record, `None` for a
    /// definition. Fails, saying why, on a record that is not one this
    /// module writes.
    pub(crate) fn record(
        &mut self,
        tag: u8,
        payload: &[u8],
    ) -> Result<Option<CompactObject>, String> {
        let mut r = Reader { buf: payload };
        match tag {
            KEY => {
                let key = std::str::from_utf8(payload).map_err(|_| "a key is not UTF-8")?;
                self.keys.push(self.interner.key(key));
                Ok(None)
            }
            TREE => {
                let node = self.node(&mut r, 0)?;
                r.end()?;
                let tree = self.interner.adopt_tree(node);
                self.trees.push(tree);
                Ok(None)
            }
            OBJECT => {
                let object = self.object(&mut r)?;
                r.end()?;
                Ok(Some(object))
            }
            other => Err(format!("unknown record type {other}")),
        }
    }

    /// The interner, with the keys and trees of the objects read.
    pub(crate) fn into_interner(self) -> Interner {
        self.interner
    }

    fn object(&mut self, r: &mut Reader<'_>) -> Result<CompactObject, String> {
        let types = if r.flag()? {
            Some((self.key(r)?, self.key(r)?))
        } else {
            None
        };
        let meta = self.meta(r)?;
        let data = self.node(r, 0)?;
        Ok(CompactObject { types, meta, data })
    }

    fn key(&self, r: &mut Reader<'_>) -> Result<Key, String> {
        defined(&self.keys, r, "key")
    }

    fn opt_key(&self, r: &mut Reader<'_>) -> Result<Option<Key>, String> {
        r.flag()?.then(|| self.key(r)).transpose()
    }

    fn node(&self, r: &mut Reader<'_>, depth: usize) -> Result<Node, String> {
        if depth > MAX_DEPTH {
            return Err(format!("a value nested more than {MAX_DEPTH} levels deep"));
        }
        Ok(match r.u8()? {
            NULL => Node::Null,
            FALSE => Node::Bool(false),
            TRUE => Node::Bool(true),
            UNSIGNED => Node::Number(r.u64()?.into()),
            SIGNED => Node::Number(r.i64()?.into()),
            FLOAT => Node::Number(
                Number::from_f64(f64::from_bits(r.u64()?)).ok_or("a number is not finite")?,
            ),
            STRING => Node::String(Str::new(r.str()?)),
            ARRAY => {
                let n = r.len()?;
                Node::Array(exactly(n, || self.node(r, depth + 1))?)
            }
            MAP => {
                let n = r.len()?;
                Node::Object(exactly(n, || Ok((self.key(r)?, self.node(r, depth + 1)?)))?)
            }
            other => return Err(format!("unknown value type {other}")),
        })
    }

    fn meta(&self, r: &mut Reader<'_>) -> Result<Meta, String> {
        let name = r.opt_str()?.map(Box::from);
        let namespace = self.opt_key(r)?;
        let uid = r.opt_str()?.map(Box::from);
        let resource_version = r.opt_str()?.map(Box::from);
        let generation = r.opt_i64()?;
        let creation_timestamp = r.opt_time()?;
        let labels = r.seq(|r| Ok((self.key(r)?, self.key(r)?)))?;
        let annotations = r.seq(|r| Ok((self.key(r)?, Str::new(r.str()?))))?;
        let managed_fields = r.seq(|r| {
            Ok(ManagedField {
                api_version: self.opt_key(r)?,
                fields_type: self.opt_key(r)?,
                fields_v1: r.flag()?.then(|| self.tree(r)).transpose()?,
                manager: self.opt_key(r)?,
                operation: self.opt_key(r)?,
                subresource: self.opt_key(r)?,
                time: r.opt_time()?,
            })
        })?;
        let owner_references = r.seq(|r| {
            Ok(OwnerRef {
                api_version: self.key(r)?,
                kind: self.key(r)?,
                name: Box::from(r.str()?),
                uid: Box::from(r.str()?),
                block_owner_deletion: r.opt_bool()?,
                controller: r.opt_bool()?,
            })
        })?;
        let rare = if r.flag()? {
            Some(Box::new(RareMeta {
                deletion_grace_period_seconds: r.opt_i64()?,
                deletion_timestamp: r.opt_time()?,
                finalizers: r.seq(|r| Ok(r.str()?.to_owned()))?.map(Vec::from),
                generate_name: r.opt_str()?.map(str::to_owned),
                self_link: r.opt_str()?.map(str::to_owned),
            }))
        } else {
            None
        };
        Ok(Meta {
            name,
            namespace,
            uid,
            resource_version,
            generation,
            creation_timestamp,
            labels,
            annotations,
            managed_fields,
            owner_references,
            rare,
        })
    }

    fn tree(&self, r: &mut Reader<'_>) -> Result<Arc<Node>, String> {
        defined(&self.trees, r, "tree")
    }
}

/// The definition (of a key or tree) whose number `r` reads next.
fn defined<T: Clone>(table: &[T], r: &mut Reader<'_>, what: &str) -> Result<T, String> {
    let id = r.varint()?;
    usize::try_from(id)
        .ok()
        .and_then(|i| table.get(i))
        .cloned()
        .ok_or_else(|| format!("{what} {id} is not defined"))
}

/// Bounds-checked reads from a payload.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.buf.len() {
            return Err("a record ends early".to_owned());
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn end(&self) -> Result<(), String> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(format!("{} bytes left over in a record", self.buf.len()))
        }
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn flag(&mut self) -> Result<bool, String> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(format!("a presence flag is {other}")),
        }
    }

    fn u64(&mut self) -> Result<u64, String> {
        let bytes: [u8; 8] = self.take(8)?.try_into().map_err(|_| "short number")?;
        Ok(u64::from_le_bytes(bytes))
    }

    fn i64(&mut self) -> Result<i64, String> {
        Ok(self.u64()?.cast_signed())
    }

    fn varint(&mut self) -> Result<u64, String> {
        read_varint(|| self.u8())
    }

    /// A length: never more than the bytes left, as each item takes one at
    /// least (so a corrupted length allocates nothing big).
    fn len(&mut self) -> Result<usize, String> {
        let n = self.varint()?;
        usize::try_from(n)
            .ok()
            .filter(|n| *n <= self.buf.len())
            .ok_or_else(|| format!("a length of {n} is beyond its record"))
    }

    fn str(&mut self) -> Result<&'a str, String> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).map_err(|_| "a string is not UTF-8".to_owned())
    }

    fn opt_str(&mut self) -> Result<Option<&'a str>, String> {
        self.flag()?.then(|| self.str()).transpose()
    }

    fn opt_i64(&mut self) -> Result<Option<i64>, String> {
        self.flag()?.then(|| self.i64()).transpose()
    }

    fn opt_bool(&mut self) -> Result<Option<bool>, String> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(false)),
            2 => Ok(Some(true)),
            other => Err(format!("a boolean is {other}")),
        }
    }

    fn opt_time(&mut self) -> Result<Option<Time>, String> {
        if !self.flag()? {
            return Ok(None);
        }
        let seconds = self.i64()?;
        let nanos: [u8; 4] = self.take(4)?.try_into().map_err(|_| "short time")?;
        k8s_openapi::jiff::Timestamp::new(seconds, i32::from_le_bytes(nanos))
            .map(|t| Some(Time(t)))
            .map_err(|e| format!("a time is out of range: {e}"))
    }

    /// An optional sequence: presence, length, then each item.
    fn seq<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T, String>,
    ) -> Result<Option<Box<[T]>>, String> {
        if !self.flag()? {
            return Ok(None);
        }
        let n = self.len()?;
        exactly(n, || item(self)).map(Some)
    }
}

/// `n` items read by `item`, in one allocation of their exact size.
fn exactly<T>(n: usize, mut item: impl FnMut() -> Result<T, String>) -> Result<Box<[T]>, String> {
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        items.push(item()?);
    }
    Ok(items.into_boxed_slice())
}
