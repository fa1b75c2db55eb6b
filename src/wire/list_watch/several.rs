//! Listing and watching several namespaces as one resource.

use futures::StreamExt;
use kube_client::Api;
use kube_client::api::{ListParams, VersionMatch, WatchParams};
use kube_core::{ApiResource, DynamicObject};

use super::{ApiListWatch, ListPage, ListWatchError, WatchEvent, WatchStream};

/// Continue token of a list across several namespaces: the namespace's
/// position, the list's resourceVersion and the server's own token.
const MULTI_TOKEN_PREFIX: &str = "kdi-ns:";

fn multi_token(index: usize, rv: &str, inner: &str) -> String {
    format!("{MULTI_TOKEN_PREFIX}{index}:{rv}:{inner}")
}

fn parse_multi_token(token: &str) -> Option<(usize, String, String)> {
    let rest = token.strip_prefix(MULTI_TOKEN_PREFIX)?;
    let mut parts = rest.splitn(3, ':');
    let index = parts.next()?.parse().ok()?;
    let rv = parts.next()?.to_owned();
    let inner = parts.next()?.to_owned();
    Some((index, rv, inner))
}

fn event_rv(event: &WatchEvent) -> Option<std::borrow::Cow<'_, str>> {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            o.resource_version()
        }
        WatchEvent::Bookmark {
            resource_version, ..
        } => Some(resource_version.into()),
        WatchEvent::Skipped { object, .. } => object.resource_version.as_deref().map(Into::into),
    }
}

impl ApiListWatch {
    /// Lists each namespace in turn at the first one's resourceVersion.
    pub(super) async fn list_several(
        &self,
        apis: Vec<Api<DynamicObject>>,
        resource: ApiResource,
        params: ListParams,
    ) -> Result<ListPage, ListWatchError> {
        let at = |rv: &Option<String>, base: &ListParams| ListParams {
            resource_version: rv.clone(),
            version_match: rv.as_ref().map(|_| VersionMatch::Exact),
            continue_token: None,
            ..base.clone()
        };
        if params.limit.is_none() {
            // One unpaged list per namespace, all at the first one's version.
            let mut rv: Option<String> = None;
            let mut all = ListPage::default();
            for api in &apis {
                let page = self.list_one(api, &resource, &at(&rv, &params)).await?;
                rv.get_or_insert_with(|| page.resource_version.clone());
                all.objects.extend(page.objects);
                all.skipped.extend(page.skipped);
                all.bytes += page.bytes;
            }
            let rv = rv.unwrap_or_default();
            all.resource_version.clone_from(&rv);
            *self.positions.lock() = Some(vec![rv; apis.len()]);
            return Ok(all);
        }
        let (mut index, mut rv, mut inner) = match &params.continue_token {
            None => (0, None, None),
            Some(token) => match parse_multi_token(token) {
                Some((index, rv, inner)) if index < apis.len() => {
                    (index, Some(rv), Some(inner).filter(|s| !s.is_empty()))
                }
                _ => return Err(ListWatchError::InvalidContinueToken(token.clone())),
            },
        };
        loop {
            let page_params = match &inner {
                Some(token) => ListParams {
                    continue_token: Some(token.clone()),
                    ..at(&None, &params)
                },
                None => at(&rv, &params),
            };
            let mut page = self.list_one(&apis[index], &resource, &page_params).await?;
            let list_rv = rv
                .get_or_insert_with(|| page.resource_version.clone())
                .clone();
            match page.continue_token.take() {
                Some(next) => {
                    page.continue_token = Some(multi_token(index, &list_rv, &next));
                }
                None if index + 1 == apis.len() => {
                    page.resource_version.clone_from(&list_rv);
                    *self.positions.lock() = Some(vec![list_rv; apis.len()]);
                    return Ok(page);
                }
                None => {
                    index += 1;
                    inner = None;
                    if page.objects.is_empty() && page.skipped.is_empty() {
                        continue;
                    }
                    page.continue_token = Some(multi_token(index, &list_rv, ""));
                }
            }
            page.resource_version = list_rv;
            return Ok(page);
        }
    }

    /// Watches each namespace from its own position, merged into one stream
    /// that ends when any of them does.
    pub(super) async fn watch_several(
        &self,
        apis: Vec<Api<DynamicObject>>,
        resource: ApiResource,
        params: WatchParams,
        rv: String,
    ) -> Result<WatchStream, ListWatchError> {
        if params.send_initial_events {
            return Err(ListWatchError::StreamingListUnsupported(
                "the initial events of several namespaces end separately".into(),
            ));
        }
        let starts = {
            let mut positions = self.positions.lock();
            let positions = positions.get_or_insert_with(Vec::new);
            if positions.len() != apis.len() {
                *positions = vec![rv; apis.len()];
            }
            positions.clone()
        };
        let mut streams = Vec::with_capacity(apis.len());
        for (i, (api, start)) in apis.iter().zip(&starts).enumerate() {
            let stream = self.watch_one(api, &resource, &params, start).await?;
            let positions = self.positions.clone();
            let tracked = stream.map(move |event| {
                if let Ok(e) = &event
                    && let Some(rv) = event_rv(e)
                    && let Some(p) = positions.lock().as_mut()
                    && let Some(slot) = p.get_mut(i)
                {
                    rv.as_ref().clone_into(slot);
                }
                Some(event)
            });
            // The merged watch ends when any namespace's does, so that the
            // reflector resumes them all.
            streams.push(tracked.chain(futures::stream::once(async { None })).boxed());
        }
        Ok(futures::stream::select_all(streams)
            .take_while(|e| futures::future::ready(e.is_some()))
            .filter_map(futures::future::ready)
            .boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_namespace_continue_tokens_round_trip() {
        let t = multi_token(2, "12345", "eyJ2Ijoi:bWV0YS5rOHMuaW8vdjEi");
        assert_eq!(
            parse_multi_token(&t),
            Some((2, "12345".into(), "eyJ2Ijoi:bWV0YS5rOHMuaW8vdjEi".into()))
        );
        assert_eq!(
            parse_multi_token(&multi_token(0, "7", "")),
            Some((0, "7".into(), String::new()))
        );
        assert_eq!(parse_multi_token("eyJ2IjoibWV0YS5rOHMuaW8vdjEi"), None);
        assert_eq!(parse_multi_token("kdi-ns:x:1:"), None);
    }
}
