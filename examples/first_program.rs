use std::time::Duration;

use kube_client::Client;
use kube_dynamic_informer::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The cluster of the current kubeconfig ($KUBECONFIG or ~/.kube/config).
    let client = Client::try_default().await?;
    let factory = InformerFactory::new(client);

    // Any resource, named as kubectl names it; resolved through discovery.
    let configmaps = factory.for_resource("configmaps").await?;
    configmaps
        .informer()
        .add_jmespath_index("app", "metadata.labels.app")?;
    let registration = configmaps.informer().add_handler(|event: Event| {
        let name = event.object().name().unwrap_or("");
        println!("{} {name}", event.kind());
    });

    factory.start()?;
    factory
        .wait_for_cache_sync(Duration::from_secs(30))
        .await
        .into_result()?;
    registration.synced().await;

    let lister = configmaps.lister();
    println!("{} ConfigMaps cached", lister.list_all().len());
    println!("{} labelled app=web", lister.by_index("app", "web")?.len());
    factory.shutdown().await;
    Ok(())
}
