//! A CRD, a few custom objects, a shared informer with a JMESPath index,
//! live events and an index query — the library's API end to end.
//!
//! Runs against the cluster of the current kubeconfig (`KUBECONFIG`); it
//! creates the CRD `widgets.demo.kdi.example.com` and the namespace
//! `kdi-demo` there if they are missing.
//!
//! ```text
//! cargo run --example demo            # the whole demo with the library API
//! cargo run --example demo -- setup   # only create the CRD and objects
//! cargo run --example demo -- change  # only recolor, add and delete widgets
//! ```
//!
//! `scripts/demo` uses `setup` and `change` around the `kdi` CLI.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Client;
use kube_client::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams,
};
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::informer::InformerOptions;
use kube_dynamic_informer::informer::{Event, SharedInformer};
use kube_dynamic_informer::vocabulary::Scope;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const GROUP: &str = "demo.kdi.example.com";
const NAMESPACE: &str = "kdi-demo";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::try_default().await?;
    let widgets = install_crd(&client).await?;
    ensure_namespace(&client).await?;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), NAMESPACE, &widgets);
    match std::env::args().nth(1).as_deref() {
        Some("setup") => return setup(&api, &widgets).await,
        Some("change") => return change(&api, &widgets).await,
        Some(other) => {
            return Err(format!("unknown argument {other:?}: expected setup or change").into());
        }
        None => setup(&api, &widgets).await?,
    }

    let options = InformerOptions::default()
        .namespace(NAMESPACE)
        .strip_managed_fields();
    let informer =
        SharedInformer::new(client.clone(), widgets.clone(), Scope::Namespaced, options)?;
    informer.add_index("color", IndexFn::jmespath("color", "spec.color")?)?;
    informer.add_handler(|event: Event| {
        let o = event.object();
        println!(
            "event: {:<6} {}/{} color={} rv={}",
            event.kind(),
            o.namespace().unwrap_or(""),
            o.name().unwrap_or(""),
            o.pointer("/spec/color")
                .and_then(|color| color.as_str())
                .unwrap_or("-"),
            o.resource_version().unwrap_or("")
        );
    });
    let cancel = CancellationToken::new();
    let task = informer.start(cancel.clone())?;
    informer.wait_for_sync(Duration::from_secs(60)).await?;
    println!("synced: {} widgets cached", informer.store().len());

    change(&api, &widgets).await?;

    // Wait until the cache reflects all three changes.
    let store = informer.store();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while store.get(&format!("{NAMESPACE}/alpha")).is_some()
        || store.get(&format!("{NAMESPACE}/delta")).is_none()
    {
        if tokio::time::Instant::now() > deadline {
            return Err("the cache did not catch up within 30s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for color in store.index_values("color")? {
        let mut names: Vec<String> = store
            .by_index("color", &color)?
            .iter()
            .filter_map(|o| o.name().map(str::to_owned))
            .collect();
        names.sort();
        println!("index color={color}: {}", names.join(", "));
    }
    cancel.cancel();
    task.await?;
    Ok(())
}

/// The starting set: alpha (red), bravo (blue), charlie (red); no delta.
async fn setup(
    api: &Api<DynamicObject>,
    widgets: &ApiResource,
) -> Result<(), Box<dyn std::error::Error>> {
    for (name, color) in [("alpha", "red"), ("bravo", "blue"), ("charlie", "red")] {
        let mut w = DynamicObject::new(name, widgets);
        w.data = json!({ "spec": { "color": color, "size": name.len() } });
        api.patch(
            name,
            &PatchParams::apply("kdi-demo").force(),
            &Patch::Apply(&w),
        )
        .await?;
    }
    match api.delete("delta", &DeleteParams::default()).await {
        Ok(_) | Err(kube_client::Error::Api(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Live changes: recolor bravo, add delta, delete alpha.
async fn change(
    api: &Api<DynamicObject>,
    widgets: &ApiResource,
) -> Result<(), Box<dyn std::error::Error>> {
    api.patch(
        "bravo",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "color": "red" } })),
    )
    .await?;
    let mut delta = DynamicObject::new("delta", widgets);
    delta.data = json!({ "spec": { "color": "green", "size": 5 } });
    api.create(&PostParams::default(), &delta).await?;
    api.delete("alpha", &DeleteParams::default()).await?;
    Ok(())
}

async fn install_crd(client: &Client) -> Result<ApiResource, Box<dyn std::error::Error>> {
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": { "name": format!("widgets.{GROUP}") },
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": { "plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wdg"] },
            "versions": [{ "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "properties": {
                    "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } } } }]
        }
    }))?;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    crds.patch(
        &format!("widgets.{GROUP}"),
        &PatchParams::apply("kdi-demo").force(),
        &Patch::Apply(&crd),
    )
    .await?;
    let gv = kube_client::core::GroupVersion::gv(GROUP, "v1");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(group) = kube_client::discovery::pinned_group(client, &gv).await
            && let Some((ar, _)) = group
                .recommended_resources()
                .into_iter()
                .find(|(ar, _)| ar.plural == "widgets")
        {
            return Ok(ar);
        }
        if tokio::time::Instant::now() > deadline {
            return Err("the widgets CRD was not served within 60s".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn ensure_namespace(client: &Client) -> Result<(), Box<dyn std::error::Error>> {
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": NAMESPACE } }))?;
    Api::<Namespace>::all(client.clone())
        .patch(
            NAMESPACE,
            &PatchParams::apply("kdi-demo").force(),
            &Patch::Apply(&ns),
        )
        .await?;
    Ok(())
}
