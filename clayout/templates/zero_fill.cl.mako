// clayout zero fill: a new buffer's bytes set to 0, 16 bytes a work-item
// (a runtime without a non-blocking fill command of its own uses it).

__kernel void zero_fill(__global uchar *restrict dst, const ulong count)
{
    const ulong first = (ulong)get_global_id(0) * 16;
    if (first + 16 <= count) {
        vstore16((uchar16)(0), 0, dst + first);
        return;
    }
    for (ulong i = first; i < count; ++i)
        dst[i] = 0;
}
