api_urlpatterns = []
page_urlpatterns = []
