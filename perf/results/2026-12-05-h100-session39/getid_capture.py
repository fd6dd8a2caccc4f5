# Is cuStreamGetId allowed while a CuPy stream is being captured?
import cupy
from cuda.bindings import driver as d

s = cupy.cuda.Stream(non_blocking=True)
print("outside:", d.cuStreamGetId(s.ptr))
with s:
    s.begin_capture()
    print("inside:", d.cuStreamGetId(s.ptr))
    print("capturing:", d.cuStreamIsCapturing(s.ptr))
    try:
        s.end_capture()
        print("end_capture ok")
    except Exception as e:
        print("end_capture:", type(e).__name__, str(e)[:150])
