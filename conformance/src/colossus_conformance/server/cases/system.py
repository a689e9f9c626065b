"""GetServerInfo (W1, W11): identity, version and every limit advertised."""

from __future__ import annotations

from colossus_agent_client.api.v1alpha1 import system_pb2 as system

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext

# Limits every worker must advertise as a positive figure (W11).
POSITIVE = (
    "max_active_runs",
    "max_active_runs_per_application",
    "max_watches",
    "max_watches_per_application",
    "max_concurrent_list_runs",
    "max_concurrent_list_runs_per_application",
    "max_connections",
    "max_concurrent_streams_per_connection",
    "max_request_bytes",
    "max_response_bytes",
    "max_header_bytes",
    "max_events_per_run",
    "max_input_parts",
    "max_input_bytes",
    "max_turns",
    "default_max_turns",
    "max_list_page_size",
    "max_list_status_filters",
)


@case(
    "system.server-info",
    ["W1", "W11"],
    "GetServerInfo names the enrolled instance, v1alpha1, a shared daemon and every limit",
)
async def server_info(ctx: CaseContext) -> None:
    info = await ctx.info(ctx.api())
    expect_equal(info.instance_id, ctx.worker.enrolments["alpha"].instance_id, "instance_id")
    expect_equal(info.api_package, "colossus.api.v1alpha1", "api_package")
    expect_equal(info.api_version, "v1alpha1", "api_version")
    expect_equal(info.deployment_mode, system.DEPLOYMENT_MODE_SHARED_DAEMON, "deployment_mode")
    limits = info.limits
    for name in POSITIVE:
        expect(getattr(limits, name) > 0, f"limit {name} is not advertised")
    for bucket in ("create_rate", "create_rate_per_application"):
        expect(getattr(limits, bucket).burst > 0, f"{bucket}.burst is not advertised")
    expect(limits.default_max_turns <= limits.max_turns, "default_max_turns above max_turns")
    if ctx.worker.manifest.has("artifacts"):
        expect("artifacts" in info.capabilities, "the manifest claims artifacts; GetServerInfo does not")
        expect(
            limits.max_artifact_bytes > 0 and limits.max_artifact_chunk_bytes > 0, "artifact limits missing"
        )


@case(
    "system.limits-as-configured",
    ["W11"],
    "limits the runner set at start are the ones advertised",
    needs=["limits.configurable"],
)
async def limits_as_configured(ctx: CaseContext) -> None:
    limits = (await ctx.info(ctx.api())).limits
    wanted = {name: int(value) for name, value in ctx.worker.limits.items()}
    seen = {
        "create_rate_per_second": limits.create_rate.refill_per_second,
        "create_rate_burst": limits.create_rate.burst,
        "create_rate_per_application_per_second": limits.create_rate_per_application.refill_per_second,
        "create_rate_per_application_burst": limits.create_rate_per_application.burst,
        "max_active_runs": limits.max_active_runs,
        "max_active_runs_per_application": limits.max_active_runs_per_application,
    }
    expect_equal({n: seen[n] for n in wanted}, wanted, "advertised limits")
