// Boost.Asio's and Boost.Beast's non-template code, compiled once for every
// target (BOOST_ASIO_SEPARATE_COMPILATION, BOOST_BEAST_SEPARATE_COMPILATION in
// CMakeLists.txt) rather than inline in each file that includes them.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
