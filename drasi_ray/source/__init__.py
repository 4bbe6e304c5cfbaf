"""The source stage: Redis stream entries in, decoded batches of changes out.

- :mod:`.platform`: ``PlatformSource``, a source definition and its builder;
- :mod:`.decode`: stream entry -> typed changes, or a reason naming the bad field;
- :mod:`.consumer`: one named consumer of a group (read, decode, dispatch, ack; reclaim on a
  timer), without Ray.
"""
