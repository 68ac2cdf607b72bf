// </script> <!-- ]]> & < > "quoted"
#include <vector>
#define EVIL(x) "</pre>" #x

__global__ void evil_kernel(const char* s) {
  const char* t = "</script><script>alert(1)</script>";
}
