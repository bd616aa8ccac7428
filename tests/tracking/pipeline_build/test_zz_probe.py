import httpx
from tests.tracking.pipeline_build.test_endpoints import BUILDS
async def test_probe(tracking: httpx.AsyncClient, auth, default_project) -> None:
    for v in ["99999999999", "gt:99999999999999999999999", "1_0", "+5", " 5 ", "٣"]:
        r = await tracking.get(BUILDS, params={"duration": v}, headers=auth)
        print(repr(v), r.status_code, r.text[:200])
    assert False
