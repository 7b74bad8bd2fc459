"""The serving event loop: uvloop where it is installed (a dependency), asyncio's otherwise."""

from __future__ import annotations


def test_the_serving_loop_is_uvloop_when_installed():
    import asyncio

    from tfpilot.serve.server import new_event_loop

    loop = new_event_loop()
    try:
        assert isinstance(loop, asyncio.AbstractEventLoop)
        try:
            import uvloop
        except ImportError:
            assert type(loop).__module__.startswith("asyncio")
        else:
            assert isinstance(loop, uvloop.Loop)
        assert loop.run_until_complete(asyncio.sleep(0, result=7)) == 7
    finally:
        loop.close()
